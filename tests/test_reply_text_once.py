"""A reply's text is stored once (migration 0019): a reply that is its turn's assistant
message word for word points at that message instead of holding a copy, and every
reader (webhook answers, pushed and pulled replies, exports) sees the same text as
before; the way down puts the text back in each row."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from core.messages import InboundMessage
from core.store.db import SessionDB
from core.store.engine import create_engines
from core.store.records import NewMessage, SessionRow, TurnOutcome
from migrations.runner import downgrade, upgrade
from tests.direct_sql import DirectSql
from tests.postgres import postgres_database

T0 = 1_780_000_000.0


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
    assert {"ix_audit_at", "ix_audit_person"} <= index_at_head
