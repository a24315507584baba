"""A turn's reads (``core.store.reads``): one hand-over each, and a store that cannot
serve them now is told apart from a bug, so the turn waits rather than fails."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.errors import StoreLocked, StoreReadOnly, StoreUnreachable
from core.store.db import SessionDB
from core.store.engine import create_engines
from core.store.reads import EngineReads, SqliteReads
from core.store.records import TurnOutcome
from core.store.schema_version import upgrade_schema
from tests.test_store import T0, message, session_row, user_and_reply


@pytest.fixture
async def path(tmp_path: Path) -> str:
    file = str(tmp_path / "state.db")
    await upgrade_schema(f"sqlite:///{file}")
    return file


@pytest.fixture
async def db(path: str) -> AsyncIterator[SessionDB]:
    async with SessionDB(f"sqlite:///{path}", busy_timeout_ms=50) as opened:
        yield opened


async def test_a_read_while_another_process_locks_the_file_is_locked_then_reads(
    path: str,
) -> None:
    reads = SqliteReads(path, busy_timeout_ms=50)
    count = "SELECT count(*) FROM sessions"
    try:
        # Before the readers' first connection: theirs would keep the WAL shared.
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("DELETE FROM prompts")
        try:
            with pytest.raises(StoreLocked):
                await reads.run(lambda tx: tx.scalar(count, {}))
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert await reads.run(lambda tx: tx.scalar(count, {})) == 0
    finally:
        await reads.close()


async def test_a_database_whose_directory_is_gone_is_unreachable_until_it_is_back(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    file = home / "state.db"
    reads = SqliteReads(str(file), busy_timeout_ms=50)
    try:
        home.rmdir()
        with pytest.raises(StoreUnreachable):
            await reads.run(lambda tx: tx.scalar("SELECT 1", {}))
        home.mkdir()
        assert await reads.run(lambda tx: tx.scalar("SELECT 1", {})) == 1
    finally:
        await reads.close()


async def test_reads_see_each_committed_turn_from_every_reader_thread(db: SessionDB) -> None:
    row = await db.open_session(session_row("s1"))
    for n in range(1, 4):
        accepted = await db.accept(message(n), row.session_key)
        await db.finish_turn(
            TurnOutcome(
                item=accepted.item,
                status="done",
                processed_at=T0 + n,
                session_id=row.id,
                messages=user_and_reply(n),
                replies=[f"answer {n}"],
            )
        )
        # More reads at once than there are reader threads: each sees the commit.
        seen = await asyncio.gather(*(db.history(row.id) for _ in range(12)))
        assert {len(h) for h in seen} == {2 * n}
        assert {h[-1].content for h in seen} == {f"answer {n}"}
        assert seen[0][-1].tool_calls == [{"id": "call_1", "name": "memory", "arguments": "{}"}]


async def test_a_read_that_tries_to_write_is_refused(path: str) -> None:
    reads = SqliteReads(path, busy_timeout_ms=50)
    try:
        with pytest.raises(StoreReadOnly):
            await reads.run(lambda tx: tx.execute("DELETE FROM sessions", {}))
        assert await reads.run(lambda tx: tx.scalar("SELECT count(*) FROM sessions", {})) == 0
    finally:
        await reads.close()


async def test_a_postgres_server_that_cannot_be_reached_is_unreachable_not_a_bug() -> None:
    engines = create_engines("postgresql://nobody@127.0.0.1:1/none")
    reads = EngineReads(engines.read)
    try:
        with pytest.raises(StoreUnreachable):
            await reads.run(lambda tx: tx.scalar("SELECT 1", {}))
    finally:
        await engines.dispose()
