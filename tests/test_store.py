"""SessionDB through a real database: SQLite files, and PostgreSQL when one is reachable."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from core.errors import StoreError
from core.messages import InboundMessage
from core.store import db as store_db
from core.store import inbox as inbox_ops
from core.store import sessions as session_ops
from core.store.audit import AuditRecord
from core.store.db import SessionDB
from core.store.engine import Engines, create_engines
from core.store.records import Accepted, InboxItem, NewMessage, SessionRow, TurnOutcome
from core.store.schema import inbox, messages, outbox, sessions
from core.store.tx import SqliteTx, Tx, insert_sql
from migrations.runner import current_revision, head_revision, upgrade
from tests.direct_sql import DirectSql
from tests.postgres import postgres_database

BUSY_TIMEOUT_MS = 1234
T0 = 1_780_000_000.0


@pytest.fixture(params=["sqlite", "postgres"])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """The URL of an empty database of each kind."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'state.db'}"
        return
    async with postgres_database() as url:
        yield url


async def migrate(url: str) -> None:
    engines = create_engines(url)
    try:
        await upgrade(engines.write)
        assert await current_revision(engines.read) == head_revision()
    finally:
        await engines.dispose()


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[SessionDB]:
    await migrate(db_url)
    async with SessionDB(db_url, busy_timeout_ms=BUSY_TIMEOUT_MS) as opened:
        yield opened


@pytest.fixture
async def tables(db_url: str) -> AsyncIterator[DirectSql]:
    """The test's own look at the rows ``db`` holds, since ``db`` keeps its engines private."""
    async with DirectSql(db_url) as sql:
        yield sql


def message(number: int = 1, *, chat_id: str = "c1", text_: str | None = None) -> InboundMessage:
    return InboundMessage(
        platform="webhook",
        chat_id=chat_id,
        user_id="u1",
        text=text_ or f"message {number}",
        platform_message_id=f"m{number}",
        dedup_key=json.dumps(["demo", chat_id, f"m{number}"]),
        received_at=T0 + number,
        route="demo",
    )


def session_row(session_id: str, key: str = "webhook:c1") -> SessionRow:
    return SessionRow(
        id=session_id,
        session_key=key,
        platform="webhook",
        chat_id=key.rsplit(":", 1)[-1],
        started_at=T0,
        last_active_at=T0,
        provider="offline",
        model="offline",
        system_prompt=f"You are the agent of {session_id}.\n\n  exact bytes  \n",
        prompt_tiers={"stable": 1, "context": 0, "volatile": 2},
    )


async def count(tables: DirectSql, table: Any, *where: Any) -> int:
    stmt = select(func.count()).select_from(table)
    if where:
        stmt = stmt.where(*where)
    return int(await tables.scalar(stmt))


# -- SQLite connection settings ------------------------------------------------------------


PRAGMA_NAMES = ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")


async def pragmas(conn: AsyncConnection) -> dict[str, Any]:
    return {n: (await conn.exec_driver_sql(f"PRAGMA {n}")).scalar_one() for n in PRAGMA_NAMES}


EXPECTED_PRAGMAS = {
    "journal_mode": "wal",
    "synchronous": 1,  # NORMAL
    "foreign_keys": 1,
    "busy_timeout": BUSY_TIMEOUT_MS,
}


async def test_every_sqlite_connection_is_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    await migrate(url)
    built: list[Engines] = []

    def recording(*args: Any, **kwargs: Any) -> Engines:
        built.append(create_engines(*args, **kwargs))
        return built[-1]

    # The engines are private to the store: keep hold of the ones the SessionDB builds.
    monkeypatch.setattr(store_db, "create_engines", recording)
    async with SessionDB(url, busy_timeout_ms=BUSY_TIMEOUT_MS) as db:
        [engines] = built
        # The writer's own connection, read from inside one of its transactions.
        seen = [await db.write(writer_pragmas)]
        # Hold several readers open at once so the pool must open distinct connections.
        readers = [await engines.read.connect() for _ in range(4)]
        try:
            seen += [await pragmas(conn) for conn in readers]
            raw = {id(await conn.get_raw_connection()) for conn in readers}
        finally:
            for conn in readers:
                await conn.close()
        # The SQLAlchemy write engine (migrations) is configured the same way.
        async with engines.write.connect() as conn:
            seen.append(await pragmas(conn))

    assert len(raw) == 4
    assert seen == [EXPECTED_PRAGMAS] * 6


def writer_pragmas(tx: Tx) -> dict[str, Any]:
    return {n: tx.scalar(f"PRAGMA {n}", {}) for n in PRAGMA_NAMES}


async def test_write_transactions_begin_immediate(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    await migrate(f"sqlite:///{path}")

    def probe(tx: Tx) -> str:
        # Nothing written yet, but the write lock must already be ours.
        tx.scalar("SELECT count(*) FROM inbox", {})
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            return str(exc)
        finally:
            other.close()
        return "another writer got the lock"

    async with SessionDB(f"sqlite:///{path}") as db:
        assert "locked" in await db.write(probe)


async def test_database_file_is_in_wal_mode_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    await migrate(f"sqlite:///{path}")
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


# -- sessions -----------------------------------------------------------------------------


async def test_one_active_session_per_key(db: SessionDB, tables: DirectSql) -> None:
    first = await db.open_session(session_row("s1"))
    rival = await db.open_session(session_row("s2"))
    other_key = await db.open_session(session_row("s3", key="webhook:c2"))

    assert first.id == rival.id == "s1"
    assert other_key.id == "s3"
    assert await db.session("s2") is None
    # A second active row for the key is refused by the index itself.
    with pytest.raises(StoreError):
        await db.write(lambda tx: insert_session_directly(tx, session_row("s4")))

    await db.write(lambda c: session_ops.end(c, "s1", "new", T0 + 5))
    fresh = await db.open_session(session_row("s5"))
    ended = await db.session("s1")
    active = await db.active_session("webhook:c1")

    assert fresh.id == "s5"
    assert active is not None
    assert active.id == "s5"
    assert ended is not None
    assert (ended.end_reason, ended.ended_at) == ("new", T0 + 5)
    assert await count(tables, sessions, sessions.c.session_key == "webhook:c1") == 2


def insert_session_directly(tx: Tx, row: SessionRow) -> None:
    values = asdict(row)
    values["prompt_tiers"] = json.dumps(values["prompt_tiers"])
    tx.execute(insert_sql("sessions", tuple(values)), values)


# A sessions row as revision 0001 knew it, written before the cache counters existed.
_SESSION_0001 = text(
    "INSERT INTO sessions (id, session_key, platform, chat_id, started_at, last_active_at, "
    "provider, model, system_prompt, turn_count, input_tokens, output_tokens) VALUES "
    "('old', 'webhook:c1', 'webhook', 'c1', :t, :t, 'offline', 'offline', 'exact  bytes', "
    "3, 420, 42)"
)


async def test_upgrading_a_0001_database_keeps_its_sessions(db_url: str) -> None:
    engines = create_engines(db_url)
    try:
        await upgrade(engines.write, "0001")
        async with engines.write.begin() as conn:
            await conn.execute(_SESSION_0001, {"t": T0})
        await upgrade(engines.write)
        assert await current_revision(engines.read) == head_revision()
    finally:
        await engines.dispose()
    async with SessionDB(db_url) as db:
        row = await db.session("old")

    assert row is not None
    assert (row.system_prompt, row.turn_count, row.input_tokens) == ("exact  bytes", 3, 420)
    assert (row.cache_read_tokens, row.cache_write_tokens) == (0, 0)


async def test_session_row_round_trips_exactly(db: SessionDB) -> None:
    opened = await db.open_session(session_row("s1"))

    assert opened == session_row("s1")
    assert await db.session("s1") == opened


# -- inbox ------------------------------------------------------------------------------------


async def test_inbox_dedup_returns_the_first_row(db: SessionDB) -> None:
    first = await db.accept(message(1), "webhook:c1")
    again = await db.accept(message(1, text_="edited text"), "webhook:c1")
    other = await db.accept(message(2), "webhook:c1")

    assert first.created
    assert not again.created
    assert again.item.id == first.item.id
    assert again.item.message.text == "message 1"
    assert again.item.message == first.item.message
    assert other.created
    assert other.item.id != first.item.id
    assert [i.id for i in await db.pending_inbox()] == [first.item.id, other.item.id]


async def test_inbox_dedup_is_per_platform(db: SessionDB) -> None:
    webhook = await db.accept(message(1), "webhook:c1")
    terminal = await db.accept(
        InboundMessage(**{**_fields(message(1)), "platform": "terminal"}), "terminal:c1"
    )

    assert webhook.created
    assert terminal.created
    assert terminal.item.id != webhook.item.id


def _fields(msg: InboundMessage) -> dict[str, Any]:
    return {name: getattr(msg, name) for name in InboundMessage.__dataclass_fields__}


async def test_concurrent_duplicates_make_one_row(db: SessionDB, tables: DirectSql) -> None:
    results = await asyncio.gather(*(db.accept(message(1), "webhook:c1") for _ in range(20)))

    assert sum(r.created for r in results) == 1
    assert len({r.item.id for r in results}) == 1
    assert await count(tables, inbox) == 1


# -- group commit -----------------------------------------------------------------------------


async def test_group_commit_batches_concurrent_writes(db_url: str) -> None:
    await migrate(db_url)
    writes = 200
    async with SessionDB(db_url) as db:
        before = db.commits
        results = await asyncio.gather(
            *(
                db.accept(message(n, chat_id=f"c{n % 7}"), f"webhook:c{n % 7}")
                for n in range(writes)
            )
        )
        commits = db.commits - before

    assert all(r.created for r in results)
    assert len({r.item.id for r in results}) == writes
    assert commits < writes // 2
    # Durable: a new SessionDB (new connections) sees every accepted row.
    async with SessionDB(db_url) as reopened, DirectSql(db_url) as fresh:
        assert await count(fresh, inbox) == writes
        assert len(await reopened.pending_inbox()) == writes


async def test_the_sqlite_writer_goes_on_while_the_event_loop_is_busy(tmp_path: Path) -> None:
    # At full load the event loop is busy handing out one transaction's results when
    # the next could start: the writer's thread must not wait for it.
    url = f"sqlite:///{tmp_path / 'state.db'}"
    await migrate(url)
    first_running, release_first, second_ran = (threading.Event() for _ in range(3))

    def first(tx: Tx) -> str:
        first_running.set()
        release_first.wait(timeout=10)
        return "first"

    def second(tx: Tx) -> str:
        second_ran.set()
        return inbox_ops.accept(tx, message(2), "webhook:c1").item.message.text

    async with SessionDB(url) as db:
        one = asyncio.ensure_future(db.write(first))
        assert await asyncio.to_thread(first_running.wait, 10)
        two = asyncio.ensure_future(db.write(second))
        await asyncio.sleep(0)  # one loop step: ``second`` is queued behind ``first``
        release_first.set()
        ran_while_the_loop_was_blocked = second_ran.wait(timeout=10)  # blocks the loop
        assert ran_while_the_loop_was_blocked
        assert await one == "first"
        assert await two == message(2).text


async def test_a_failed_write_never_quotes_the_message_text(
    db: SessionDB, caplog: pytest.LogCaptureFixture
) -> None:
    body = "Marmalade zeppelin 7731 over Quixotic Harbour"

    def orphan_message(tx: Tx) -> None:
        row = {"session_id": "nope", "role": "user", "content": body, "created_at": T0}
        tx.execute(insert_sql("messages", tuple(row)), row)

    with caplog.at_level(logging.DEBUG), pytest.raises(StoreError) as raised:
        await db.write(orphan_message)

    assert "SessionDB write failed" in str(raised.value)
    assert "Marmalade" not in str(raised.value)
    assert "Marmalade" not in caplog.text
    assert "write failed" in caplog.text


async def test_failing_op_fails_only_its_caller(db: SessionDB, tables: DirectSql) -> None:
    def insert_then_fail(tx: Tx) -> None:
        inbox_ops.accept(tx, message(100), "webhook:c1")
        raise ValueError("this op is broken")

    def orphan_message(tx: Tx) -> None:
        row = {"session_id": "no-such-session", "role": "user", "created_at": T0}
        tx.execute(insert_sql("messages", tuple(row)), row)

    good = [db.accept(message(n), "webhook:c1") for n in range(10)]
    results = await asyncio.gather(
        *good[:5],
        db.write(insert_then_fail),
        *good[5:],
        db.write(orphan_message),
        return_exceptions=True,
    )

    accepted, broken, orphan = results[:5] + results[6:11], results[5], results[11]
    assert all(isinstance(r, Accepted) and r.created for r in accepted)
    assert isinstance(broken, StoreError)
    assert "this op is broken" in str(broken)
    assert isinstance(orphan, StoreError)  # foreign keys are enforced
    assert await count(tables, inbox) == 10
    assert await count(tables, inbox, inbox.c.platform_message_id == "m100") == 0
    assert await count(tables, messages) == 0
    # The writer keeps going after a failure.
    assert (await db.accept(message(11), "webhook:c1")).created


async def test_cancelled_caller_does_not_cancel_the_shared_commit(
    db: SessionDB, tables: DirectSql
) -> None:
    writes = [asyncio.ensure_future(db.accept(message(n), "webhook:c1")) for n in range(5)]
    await asyncio.sleep(0)  # one loop step: every write is queued, none committed yet
    writes[2].cancel()
    results = await asyncio.gather(*writes, return_exceptions=True)

    assert isinstance(results[2], asyncio.CancelledError)
    assert sum(1 for r in results if not isinstance(r, BaseException)) == 4
    assert await count(tables, inbox) == 5  # the cancelled caller's write still committed


# -- turns ------------------------------------------------------------------------------------


def user_and_reply(number: int) -> list[NewMessage]:
    return [
        NewMessage(role="user", content=f"question {number}", created_at=T0 + number),
        NewMessage(
            role="assistant",
            content=f"answer {number}",
            created_at=T0 + number,
            tool_calls=[{"id": "call_1", "name": "memory", "arguments": "{}"}],
            input_tokens=10,
            output_tokens=3,
            cache_read_tokens=8,
            cache_write_tokens=2,
        ),
    ]


async def test_many_rows_written_at_once_all_land_in_order(db: SessionDB) -> None:
    # 150 events: on SQLite a multi-row INSERT per chunk (128 + 16 + 4 + 1 + 1 rows).
    records = [
        AuditRecord(at=T0 + i, event=f"e{i}", turn_id=i, message_id=f"m{i}", detail={"n": i})
        for i in range(150)
    ]
    await db.audit.append(records)
    stored = await db.audit.rows(limit=None)
    assert [(r.at, r.event, r.turn_id, r.message_id, r.detail) for r in stored] == [
        (r.at, r.event, r.turn_id, r.message_id, r.detail) for r in records
    ]


def test_many_rows_fit_an_older_sqlites_parameter_limit() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)  # SQLite before 3.32
    conn.execute("CREATE TABLE t (a, b, c, d, e, f, g, h, i, j)")
    columns = list("abcdefghij")
    rows = [{c: f"{c}{n}" for c in columns} for n in range(300)]
    SqliteTx(conn).executemany(insert_sql("t", columns), rows)
    assert conn.execute("SELECT * FROM t ORDER BY rowid").fetchall() == [
        tuple(r.values()) for r in rows
    ]


async def test_finished_turn_is_written_whole(db: SessionDB, tables: DirectSql) -> None:
    session = await db.open_session(session_row("s1"))
    accepted = await db.accept(message(1), "webhook:c1")
    replies = await db.finish_turn(
        TurnOutcome(
            item=accepted.item,
            status="done",
            processed_at=T0 + 9,
            session_id=session.id,
            messages=user_and_reply(1),
            replies=["answer 1"],
            tool_calls=1,
            input_tokens=10,
            output_tokens=3,
            cache_read_tokens=8,
            cache_write_tokens=2,
        )
    )
    history = await db.history(session.id)
    updated = await db.session(session.id)
    item = await db.inbox_item(accepted.item.id)

    assert [r.text for r in replies] == ["answer 1"]
    assert await db.replies_for(accepted.item.id) == replies
    assert [(m.role, m.content) for m in history] == [
        ("user", "question 1"),
        ("assistant", "answer 1"),
    ]
    assert history[1].tool_calls == [{"id": "call_1", "name": "memory", "arguments": "{}"}]
    assert updated is not None
    assert (updated.turn_count, updated.message_count, updated.tool_call_count) == (1, 2, 1)
    assert (updated.input_tokens, updated.output_tokens) == (10, 3)
    assert (updated.cache_read_tokens, updated.cache_write_tokens) == (8, 2)
    assert await message_cache_tokens(tables, session.id) == [(None, None), (8, 2)]
    assert item is not None
    assert (item.status, item.session_id) == ("done", session.id)
    assert await db.pending_inbox() == []


async def test_a_done_message_keeps_no_payload_and_its_redelivery_is_still_answered(
    db: SessionDB, tables: DirectSql
) -> None:
    quoting = replace(message(1), reply_to="m0", addressed=False)
    session = await db.open_session(session_row("s1"))
    done = await db.accept(quoting, "webhook:c1")
    waiting = await db.accept(replace(message(2), reply_to="m1", is_group=True), "webhook:c1")
    await db.finish_turn(
        TurnOutcome(
            item=done.item,
            status="done",
            processed_at=T0 + 9,
            session_id=session.id,
            messages=user_and_reply(1),
            replies=["answer 1"],
        )
    )
    again = await db.accept(quoting, "webhook:c1")
    payloads = await tables.rows(select(inbox.c.payload).order_by(inbox.c.id))

    assert [r.payload is None for r in payloads] == [True, False]
    # A message still waiting for its turn keeps everything its dispatch reads.
    assert [i.message for i in await db.pending_inbox()] == [waiting.item.message]
    assert (again.created, again.item.id, again.item.status) == (False, done.item.id, "done")
    assert again.item.message.text == quoting.text
    assert [r.text for r in await db.replies_for(again.item.id)] == ["answer 1"]


async def message_cache_tokens(tables: DirectSql, session_id: str) -> list[tuple[Any, Any]]:
    stmt = (
        select(messages.c.cache_read_tokens, messages.c.cache_write_tokens)
        .where(messages.c.session_id == session_id)
        .order_by(messages.c.id)
    )
    return [tuple(r) for r in await tables.rows(stmt)]


async def test_a_turn_that_fails_to_commit_leaves_nothing(db: SessionDB, tables: DirectSql) -> None:
    session = await db.open_session(session_row("s1"))
    ghost = InboxItem(id=987_654, session_key="webhook:c1", message=message(1))
    outcome = TurnOutcome(
        item=ghost,  # the reply's foreign key fails last, after the transcript was written
        status="done",
        processed_at=T0 + 9,
        session_id=session.id,
        messages=user_and_reply(1),
        replies=["answer 1"],
    )

    with pytest.raises(StoreError):
        await db.finish_turn(outcome)

    assert await db.history(session.id) == []
    assert await db.session(session.id) == session
    assert await count(tables, outbox) == 0


async def test_replies_after_a_cursor(db: SessionDB) -> None:
    first = await db.accept(message(1), "webhook:c1")
    second = await db.accept(message(2), "webhook:c1")
    elsewhere = await db.accept(message(3, chat_id="c2"), "webhook:c2")
    for accepted, reply in ((first, "r1"), (second, "r2"), (elsewhere, "r3")):
        await db.finish_turn(
            TurnOutcome(item=accepted.item, status="done", processed_at=T0, replies=[reply])
        )

    def ask(after: int) -> Any:
        return db.replies_after(platform="webhook", route="demo", chat_id="c1", after=after)

    page = await ask(0)
    rest = await ask(page[0].id)
    none = await ask(page[-1].id)
    other_route = await db.replies_after(platform="webhook", route="other", chat_id="c1", after=0)

    assert [r.text for r in page] == ["r1", "r2"]
    assert [r.text for r in rest] == ["r2"]
    assert none == []
    assert other_route == []
    assert [r.text for r in await db.pending_replies("webhook")] == ["r1", "r2", "r3"]
    await db.mark_delivered([page[0].id], T0 + 1)
    assert [r.text for r in await db.pending_replies("webhook")] == ["r2", "r3"]


async def test_ping(db: SessionDB, tables: DirectSql) -> None:
    await db.ping()
    assert await tables.scalar(text("SELECT 1")) == 1


async def test_nul_characters_are_stored_on_every_backend(db: SessionDB) -> None:
    # PostgreSQL text cannot hold NUL: a platform message or model reply carrying one
    # must not turn into a failed write that is retried at every start.
    session = await db.open_session(session_row("s1"))
    accepted = await db.accept(message(1, text_="before\x00after"), "webhook:c1")
    replies = await db.finish_turn(
        TurnOutcome(
            item=accepted.item,
            status="done",
            processed_at=T0 + 9,
            session_id=session.id,
            messages=[NewMessage(role="assistant", content="a\x00b", created_at=T0 + 9)],
            replies=["reply\x00"],
        )
    )

    again = await db.accept(message(1, text_="before\x00after"), "webhook:c1")
    history = await db.history(session.id)
    assert again.created is False
    assert again.item.message.text == "before\ufffdafter"
    assert [m.content for m in history] == ["a\ufffdb"]
    assert [r.text for r in replies] == ["reply\ufffd"]
    assert [r.text for r in await db.replies_for(accepted.item.id)] == ["reply\ufffd"]


async def test_compaction_switches_sessions_atomically(db: SessionDB) -> None:
    parent = await db.open_session(session_row("p1"))
    child = replace(session_row("c1"), parent_session_id="p1", message_count=1)
    opening = [NewMessage(role="user", content="summary", created_at=T0 + 1)]

    opened = await db.compact("p1", T0 + 1, child, opening)

    ended = await db.session("p1")
    assert opened.id == "c1"
    assert opened.parent_session_id == parent.id
    assert ended is not None
    assert ended.end_reason == "compaction"
    assert [m.content for m in await db.history("c1")] == ["summary"]
    # A second compaction of the (now ended) parent cannot open another child: the whole
    # transaction rolls back, so the active child and its transcript stay as they were.
    rival = replace(session_row("c2"), parent_session_id="p1")
    with pytest.raises(StoreError):
        await db.compact("p1", T0 + 2, rival, opening)
    active = await db.active_session("webhook:c1")
    assert active is not None
    assert active.id == "c1"
    assert await db.session("c2") is None
