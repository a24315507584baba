"""Compaction through the gateway: a child session carries on, nothing is lost."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select

from core.compaction import NOTICE, SUMMARY_INSTRUCTION, SUMMARY_PREFIX
from core.store.schema import messages, sessions
from tests.direct_sql import DirectSql, read_rows
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway

SMALL_WINDOW = "compaction:\n  context_window: 1000\n  threshold: 0.9\n  keep_recent_messages: 2\n"


async def session_rows(gw: RunningGateway) -> list[tuple[str, str | None, str | None]]:
    rows = await read_rows(
        gw.settings.database_url,
        select(sessions.c.id, sessions.c.parent_session_id, sessions.c.end_reason).order_by(
            sessions.c.started_at
        ),
    )
    return [(r.id, r.parent_session_id, r.end_reason) for r in rows]


async def message_count(gw: RunningGateway, session_id: str) -> int:
    stmt = select(func.count()).where(messages.c.session_id == session_id)
    async with DirectSql(gw.settings.database_url) as sql:
        return int(await sql.scalar(stmt))


async def test_a_long_message_compacts_the_session_before_its_turn(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text(SMALL_WINDOW, encoding="utf-8")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        first = await gw.say("we are planning the zeppelin launch")
        await gw.say("the launch date is March 3")
        fake_openai.reply_text("The user plans a zeppelin launch.")
        long_text = "please review this checklist: " + "check the valves. " * 180
        after = await gw.say(long_text)
        rows = await session_rows(gw)
        parent_kept = await message_count(gw, first.json()["session_id"])

    parent_id = first.json()["session_id"]
    child_id = after.json()["session_id"]
    assert child_id != parent_id
    assert rows == [(parent_id, None, "compaction"), (child_id, parent_id, None)]
    assert parent_kept == 4  # the parent keeps every message it had
    assert [r["text"] for r in after.json()["replies"]][0] == NOTICE
    summary_request, turn_request = fake_openai.requests[2], fake_openai.requests[3]
    assert summary_request["messages"][0]["content"] == SUMMARY_INSTRUCTION
    assert "zeppelin launch" in summary_request["messages"][1]["content"]
    sent = [m["content"] for m in turn_request["messages"][1:]]
    assert sent[0].startswith(SUMMARY_PREFIX)
    assert "The user plans a zeppelin launch." in sent[0]
    # The recent exchange is carried over verbatim, then the new message.
    assert sent[2:] == ["the launch date is March 3", "echo: the launch date is March 3", long_text]
    assert child_id in turn_request["messages"][0]["content"]  # a freshly built prompt


async def test_compact_by_hand_and_the_chat_goes_on_after_a_restart(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        first = await gw.say("remember the code word is heliotrope")
        await gw.say("and the backup word is quince")
        fake_openai.reply_text("Code word heliotrope; backup word quince.")
        compacted = await gw.say("/compact")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        later = await gw.say("what were the words?")
        rows = await session_rows(gw)

    assert compacted.json()["replies"] == [{"text": NOTICE}]
    assert (
        later.json()["session_id"] == compacted.json()["session_id"] != first.json()["session_id"]
    )
    assert [r[2] for r in rows] == ["compaction", None]
    replay = [m["content"] for m in fake_openai.requests[-1]["messages"][1:]]
    assert "Code word heliotrope; backup word quince." in replay[0]
    assert replay[-1] == "what were the words?"


async def test_compact_opens_no_session_and_leaves_a_fresh_one_alone(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        without = await gw.say("/compact")
        rows_without = await session_rows(gw)
        await gw.say("hello")
        fresh = await gw.say("/compact")
        rows = await session_rows(gw)

    assert without.json()["replies"][0]["text"] == (
        "Nothing to compact: this chat has no session yet."
    )
    assert without.json()["session_id"] is None
    assert rows_without == []  # /compact opened no session
    assert "Nothing to compact yet" in fresh.json()["replies"][0]["text"]
    assert [r[2] for r in rows] == [None]  # the one session, no compacted child
    assert len(fake_openai.requests) == 1  # "hello"; no summary was asked for
