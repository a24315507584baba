"""``retention.queue_days``: the delivery queue forgets handled messages and sent replies.

Driven through the webhook with a manual clock: what a client notices is that the
transcript and the replies it has not fetched yet outlive the window, and that its
replies cursor keeps working after a prune.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from core.clock import ManualClock
from core.people.retention import Pruning, Retention
from core.store.schema import approvals, inbox, messages, outbox
from gateway.features.retention import RetentionFeature
from tests.direct_sql import DirectSql
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway
from tests.test_approvals_e2e import WipeTool, configure, decide, idle, paused_on, pulled
from tests.test_cli import assert_one_line_config_error, chatgate, write_yaml
from tests.test_webhook_e2e import rows

DAY = 86_400.0
T0 = 1_780_000_000.0


def _retention(gw: RunningGateway) -> Retention:
    retention = gw.gateway.feature(RetentionFeature).retention
    assert retention is not None
    return retention


async def _replies(gw: RunningGateway, chat_id: str, after: int = 0) -> dict[str, Any]:
    answer = await gw.client.get(f"/webhook/demo/chats/{chat_id}/replies?after={after}")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _echoed(replies: dict[str, Any]) -> list[str]:
    """What the offline model says each of these replies answered (``You said: "..."``)."""
    return [r["text"].rsplit("You said: ", 1)[-1] for r in replies["replies"]]


async def test_handled_messages_leave_the_queue_after_queue_days_and_the_transcript_stays(
    home: Path, database_env: dict[str, str]
) -> None:
    clock = ManualClock(T0)
    async with running_gateway(home, database_env, clock=clock) as gw:
        first = await gw.say("tell me about lighthouses", chat_id="c1", message_id="m1")
        queued = await gw.client.post(
            "/webhook/demo?wait=false", json={"chat_id": "c2", "user_id": "u2", "text": "later"}
        )
        assert queued.status_code == 202
        await idle(gw, "c2")
        clock.advance(6 * DAY)
        assert await _retention(gw).check() == Pruning()  # six days: nothing is old enough
        clock.advance(2 * DAY)
        await gw.say("and harbours?", chat_id="c3")
        pruned = await _retention(gw).check()
        again = await gw.say("what did I ask first?", chat_id="c1")
        unfetched = await _replies(gw, "c2")
        url = gw.settings.database_url

    # c1's first message and its reply went; c2's reply was never fetched, so it and its
    # message stay; c3's are a second old.
    assert (pruned.inbox, pruned.replies) == (1, 1)
    assert _echoed(unfetched) == ['"later"']
    async with DirectSql(url) as sql:
        left = [(r.chat_id, r.text) for r in await sql.rows(select(inbox).order_by(inbox.c.id))]
        replies = {r.chat_id for r in await sql.rows(select(outbox))}
        transcript = await sql.rows(
            select(messages.c.content).where(messages.c.session_id == first.json()["session_id"])
        )
    assert left == [("c2", "later"), ("c3", "and harbours?"), ("c1", "what did I ask first?")]
    assert replies == {"c2", "c3", "c1"}
    # The chat goes on in the same session, its first turn still in the transcript.
    assert again.json()["session_id"] == first.json()["session_id"]
    said = [r.content for r in transcript]
    assert len(said) == 4
    assert said[0] == "tell me about lighthouses"


async def test_a_replies_cursor_stays_valid_when_the_newest_rows_are_pruned(
    home: Path, database_env: dict[str, str]
) -> None:
    clock = ManualClock(T0)
    async with running_gateway(home, database_env, clock=clock) as gw:
        await gw.say("one", chat_id="c1")
        await gw.say("two", chat_id="c1")
        seen = await _replies(gw, "c1")
        clock.advance(30 * DAY)
        pruned = await _retention(gw).check()
        await gw.say("three", chat_id="c1")
        after = await _replies(gw, "c1", int(seen["cursor"]))

    # Everything is a month old and goes, the newest message and reply too; the next
    # reply still takes an id the client has not seen (SQLite would have reused the
    # deleted one without AUTOINCREMENT, and the cursor would skip it).
    assert (pruned.inbox, pruned.replies) == (2, 2)
    assert _echoed(seen) == ['"one"', '"two"']
    assert _echoed(after) == ['"three"']


async def test_queue_days_null_keeps_the_queue(home: Path) -> None:
    (home / "config.yaml").write_text("retention:\n  queue_days: null\n", encoding="utf-8")
    clock = ManualClock(T0)
    async with running_gateway(home, clock=clock) as gw:
        await gw.say("one", chat_id="c1")
        await gw.say("two", chat_id="c1")
        clock.advance(365 * DAY)
        assert "retention" not in {job.id for job in gw.gateway.scheduler.jobs()}
        replies = await _replies(gw, "c1")

    assert len(replies["replies"]) == 2


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ("retention: {queue_days: 0.5}\n", "greater than or equal to 1"),
        (
            "retention: {queue_days: 2}\ndiscord: {catch_up_max_age: 259200}\n",
            "discord.catch_up_max_age",
        ),
    ],
)
def test_a_queue_window_too_short_stops_run(home: Path, config: str, words: str) -> None:
    write_yaml(home, config)

    line = assert_one_line_config_error(chatgate("run"), "retention.queue_days")
    assert words in line


async def test_a_notice_to_no_message_goes_on_its_own_age_once_fetched(home: Path) -> None:
    (home / "config.yaml").write_text("webhook:\n  owners: [boss]\n", encoding="utf-8")
    clock = ManualClock(T0)
    async with running_gateway(home, clock=clock) as gw:
        await gw.say("/forget-me", chat_id="alice-dm", user_id="alice")
        await gw.say("/forget-me confirm", chat_id="alice-dm", user_id="alice")
        told = await _replies(gw, "boss")  # the owners' notice, fetched: sent
        clock.advance(8 * DAY)
        await gw.say("a week later", chat_id="c1")
        pruned = await _retention(gw).check()
        after = await _replies(gw, "boss")

    assert [r["text"] for r in told["replies"]][0].startswith("Someone on webhook used /forget-me")
    # The forgetting took the first /forget-me; the confirming one goes with its reply,
    # and the notice, a reply to no message, on its own.
    assert (pruned.inbox, pruned.replies) == (1, 2)
    assert after["replies"] == []


async def test_a_message_an_approval_points_at_stays_with_its_prompt(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    fake_openai.reply_tool_call("wipe_disk", {"path": "/srv/old"}, call_id="call_wipe")
    fake_openai.reply_text("The old folder is gone.")
    fake_openai.reply_text("Hello again.")
    clock = ManualClock(T0)
    env = fake_openai.gateway_env()
    async with running_gateway(home, env, tools=[WipeTool()], clock=clock) as gw:
        approval = paused_on(await gw.say("please wipe /srv/old", message_id="m1"))
        assert (await decide(gw, approval["id"], "approve")).status_code == 200
        await idle(gw)
        assert "The old folder is gone." in await pulled(gw)  # nothing left to send
        clock.advance(8 * DAY)
        await gw.say("a week later", chat_id="c2")
        pruned = await _retention(gw).check()
        messages_left = await rows(gw, select(inbox.c.platform_message_id))
        prompt = await rows(gw, select(approvals.c.prompt_outbox_id))
        replies_left = {r.id for r in await rows(gw, select(outbox.c.id))}

    assert pruned.inbox == 0
    assert "m1" in {r.platform_message_id for r in messages_left}
    assert prompt[0].prompt_outbox_id in replies_left
