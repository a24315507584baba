"""A reply's text is stored once (migration 0019): a reply that is its turn's assistant
message word for word points at that message instead of holding a copy, and every
reader (webhook answers, pushed and pulled replies, exports) sees the same text as
before; the way down puts the text back in each row."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import inspect, select, text

from core.messages import InboundMessage
from core.people.person import Person
from core.store.db import SessionDB
from core.store.engine import create_engines
from core.store.people.areas import ForgetContext
from core.store.records import InboxItem, NewMessage, SessionRow, TurnOutcome
from core.store.schema import outbox
from migrations.runner import downgrade, upgrade
from tests.direct_sql import DirectSql, read_rows
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegram
from tests.gateway_server import running_gateway
from tests.postgres import postgres_database
from tests.test_telegram_e2e import rows, telegram_gateway

T0 = 1_780_000_000.0
# NUL is scrubbed on every backend (``core.store.text``): the reply's text and the
# message's content the same way.
ANSWER = "answer one\x00 and more"


@pytest.fixture(params=["sqlite", "postgres"])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'state.db'}"
        return
    async with postgres_database() as url:
        yield url


def inbound(number: int, user_id: str = "u1") -> InboundMessage:
    return InboundMessage(
        platform="webhook",
        chat_id="c1",
        user_id=user_id,
        text=f"question {number}",
        platform_message_id=f"m{number}",
        dedup_key=json.dumps(["demo", "c1", f"m{number}"]),
        received_at=T0 + number,
        route="demo",
    )


def session_row(session_id: str) -> SessionRow:
    return SessionRow(
        id=session_id,
        session_key="webhook:c1",
        platform="webhook",
        chat_id="c1",
        started_at=T0,
        last_active_at=T0,
        provider="offline",
        model="offline",
        system_prompt="You are the agent.",
    )


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[SessionDB]:
    await migrate(db_url)
    async with SessionDB(db_url) as opened:
        yield opened


async def migrate(url: str, revision: str = "head", *, down: bool = False) -> None:
    engines = create_engines(url)
    try:
        await (downgrade if down else upgrade)(engines.write, revision)
    finally:
        await engines.dispose()


# -- the migration ----------------------------------------------------------------------------


async def _plant_reply_rows(url: str) -> int:
    """At the head: a turn with a notice (its own text), then by hand a reply that points
    at the turn's assistant message (with a file) and one whose message is gone."""
    async with SessionDB(url) as db:
        session = await db.open_session(session_row("s1"))
        item = (await db.accept(inbound(1), "webhook:c1")).item
        await db.finish_turn(
            TurnOutcome(
                item=item,
                status="done",
                processed_at=T0 + 2,
                session_id=session.id,
                messages=[
                    NewMessage(role="user", content="question 1", created_at=T0 + 1),
                    NewMessage(role="assistant", content="answer one", created_at=T0 + 2),
                ],
                replies=["a notice"],
            )
        )
    async with DirectSql(url) as sql, sql.begin() as conn:
        answer_id = (
            await conn.execute(text("SELECT id FROM messages WHERE role = 'assistant'"))
        ).scalar_one()
        for message_id in (answer_id, 987_654):
            await conn.execute(
                text(
                    "INSERT INTO outbox (inbox_id, session_id, platform, route, chat_id, "
                    "text, status, attempts, created_at, file_count, message_id) VALUES "
                    "(:inbox, 's1', 'webhook', 'demo', 'c1', NULL, 'delivered', 0, :at, "
                    ":files, :message_id)"
                ),
                {
                    "inbox": item.id,
                    "at": T0 + 3,
                    "files": 1 if message_id == answer_id else 0,
                    "message_id": message_id,
                },
            )
        await conn.execute(
            text(
                "INSERT INTO outbox_files (id, outbox_id, position, sha256, mime, kind, name, "
                "size) SELECT 'f1', id, 0, 'ab', 'text/plain', 'file', 'a.txt', 3 FROM outbox "
                "WHERE message_id = :id"
            ),
            {"id": answer_id},
        )
    return item.id


async def _outbox_texts(url: str) -> list[str | None]:
    async with DirectSql(url) as sql:
        rows = await sql.rows(text("SELECT text FROM outbox ORDER BY id"))
    return [r.text for r in rows]


async def _indexes(url: str, table: str) -> set[str]:
    async with DirectSql(url) as sql, sql.connect() as conn:
        found = await conn.run_sync(lambda sync: inspect(sync).get_indexes(table))
    return {str(index["name"]) for index in found}


async def test_downgrading_puts_each_reply_text_back_and_upgrading_reads_it_again(
    db_url: str,
) -> None:
    await migrate(db_url)
    inbox_id = await _plant_reply_rows(db_url)
    async with SessionDB(db_url) as db:
        at_head = [(r.text, len(r.files)) for r in await db.replies_for(inbox_id)]
    index_at_head = await _indexes(db_url, "audit")

    await migrate(db_url, "0019", down=True)
    index_0019 = await _indexes(db_url, "audit")
    await migrate(db_url, "0018", down=True)
    texts_down = await _outbox_texts(db_url)
    index_down = await _indexes(db_url, "audit")
    await migrate(db_url)
    async with SessionDB(db_url) as db:
        up_again = [(r.text, len(r.files)) for r in await db.replies_for(inbox_id)]

    # The file stayed with its reply through both table rebuilds (SQLite).
    assert at_head == [("a notice", 0), ("answer one", 1), ("", 0)]
    assert texts_down == ["a notice", "answer one", ""]
    assert up_again == at_head
    assert "ix_audit_event" not in index_at_head
    assert "ix_audit_event" in index_down
    assert {"ix_audit_at", "ix_audit_person"} <= index_0019


# -- writing and reading ----------------------------------------------------------------------


def turn(item: InboxItem, session_id: str, answer: str, *replies: str) -> TurnOutcome:
    """A done turn of ``item``: its user message, a tool call, then ``answer``."""
    return TurnOutcome(
        item=item,
        status="done",
        processed_at=item.message.received_at + 1,
        session_id=session_id,
        messages=[
            NewMessage(
                role="user",
                content=item.message.text,
                created_at=item.message.received_at,
                user_id=item.message.user_id,
            ),
            NewMessage(
                role="assistant",
                content="let me look",
                created_at=item.message.received_at,
                tool_calls=[{"id": "call_1", "name": "memory", "arguments": "{}"}],
            ),
            NewMessage(role="tool", content="found", tool_call_id="call_1", created_at=T0),
            NewMessage(role="assistant", content=answer, created_at=item.message.received_at),
        ],
        replies=list(replies),
    )


async def stored_replies(url: str) -> list[tuple[str | None, bool]]:
    """Each outbox row's own text and whether it points at a message."""
    found = await read_rows(url, select(outbox.c.text, outbox.c.message_id).order_by(outbox.c.id))
    return [(r.text, r.message_id is not None) for r in found]


async def test_an_answer_is_stored_once_and_every_reader_sees_its_text(
    db: SessionDB, db_url: str
) -> None:
    session = await db.open_session(session_row("s1"))
    item = (await db.accept(inbound(1), "webhook:c1")).item
    queued = await db.finish_turn(turn(item, session.id, ANSWER, "a notice first", ANSWER))
    history = await db.history(session.id)

    said = ANSWER.replace("\x00", "\ufffd")
    assert [r.text for r in queued] == ["a notice first", said]
    assert history[-1].content == said
    assert await stored_replies(db_url) == [("a notice first", False), (None, True)]
    assert await db.replies_for(item.id) == queued  # the webhook's answer, a redelivery's
    assert await db.pending_replies("webhook", 10) == queued  # push delivery, on restart
    pulled = await db.replies_after(
        platform="webhook", route="demo", chat_id="c1", after=0, limit=9
    )
    assert pulled == queued
    shown = await db.people.rows(Person("webhook", "u1"))
    assert [r["replies"] for r in shown.areas["inbox"]] == [["a notice first", said]]


async def test_a_reply_that_is_no_message_of_its_turn_keeps_its_text(
    db: SessionDB, db_url: str
) -> None:
    session = await db.open_session(session_row("s1"))
    item = (await db.accept(inbound(1), "webhook:c1")).item
    # Only the last words of the answer were sent (say, a bound's line): no match.
    queued = await db.finish_turn(turn(item, session.id, "the answer", "the answer."))

    assert await stored_replies(db_url) == [("the answer.", False)]
    assert await db.replies_for(item.id) == queued


async def test_forgetting_a_person_leaves_no_reply_text_of_theirs_in_the_outbox(
    db: SessionDB, db_url: str
) -> None:
    shared = await db.open_session(session_row("s1"))  # one session for the whole chat
    alice = (await db.accept(inbound(1, "alice"), "webhook:c1")).item
    bob = (await db.accept(inbound(2, "bob"), "webhook:c1")).item
    await db.finish_turn(turn(alice, shared.id, "echo: zebrafluxword", "echo: zebrafluxword"))
    await db.finish_turn(turn(bob, shared.id, "echo: quokkamarble", "echo: quokkamarble"))

    await db.people.forget(Person("webhook", "alice"), ForgetContext(at=T0 + 10))
    async with DirectSql(db_url) as sql:
        every = await sql.rows(
            text(
                "SELECT o.text, m.content FROM outbox o LEFT JOIN messages m ON m.id = o.message_id"
            )
        )

    assert await db.replies_for(alice.id) == []
    assert [r.text for r in await db.replies_for(bob.id)] == ["echo: quokkamarble"]
    assert "zebrafluxword" not in repr(every)
    assert "quokkamarble" in repr(every)


async def test_a_redelivered_webhook_message_gets_the_same_reply_text(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        first = await gw.say("hello", message_id="m1")
        again = await gw.say("hello", message_id="m1")  # answered from the outbox
        url = gw.settings.database_url

    assert len(fake_openai.requests) == 1
    assert first.json()["replies"] == again.json()["replies"] == [{"text": "echo: hello"}]
    assert await stored_replies(url) == [(None, True)]


async def test_a_reply_left_pending_at_a_stop_is_sent_with_its_text_after_the_restart(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg:
        async with telegram_gateway(home, tg, fake_openai):
            tg.fail("sendMessage", status=500, times=1000)
            tg.push_update(tg.private_message("are you there?"))
            await tg.wait_call("sendMessage", 1)
        left = rows(home, "SELECT status, text, message_id IS NOT NULL AS ref FROM outbox")
        tg.clear_failures()
        async with telegram_gateway(home, tg, fake_openai):
            [sent] = await tg.wait_sent(1)

    assert left == [{"status": "pending", "text": None, "ref": 1}]
    assert sent.text == "echo: are you there?"
