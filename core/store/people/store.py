"""The people repository: one person's rows listed, or forgotten in one transaction;
ended sessions pruned for retention.

Forgetting on SQLite also removes the bytes: ``PRAGMA secure_delete`` makes SQLite zero
what it frees, the FTS5 indexes are optimized after the delete (the terms of deleted
rows otherwise stay in older index segments until a merge; FTS5's own ``secure-delete``
option needs SQLite 3.42, optimize works everywhere), and ``reclaim`` checkpoints the
WAL so the old page images leave the ``-wal`` file too. On PostgreSQL the deleted rows'
tuples stay in the table files until VACUUM reuses them.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from dataclasses import field

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from core.people.person import Person
from core.record import record
from core.store import prompts
from core.store.people.areas import DB_AREAS, ForgetContext, Rows
from core.store.people.drop import drop_session
from core.store.people.plan import plan
from core.store.tx import SqlAlchemyTx, Tx
from core.store.writer import Writer

_FTS_TABLES = ("messages_fts", "messages_trigram")


@record
class PersonRows:
    """Every area's rows about one person (``DB_AREAS`` order)."""

    person: Person
    areas: dict[str, Rows]

    def counts(self) -> dict[str, int]:
        return {name: len(rows) for name, rows in self.areas.items()}


@record
class Forgotten:
    """What one forgetting changed, per area, and the session keys it touched (a running
    gateway drops its cached transcripts of those)."""

    counts: dict[str, int]
    session_keys: tuple[str, ...]
    # Their messages still waiting for a turn: kept, the running gateway owns them.
    waiting: int = 0


@record
class Pruned:
    sessions: int = 0
    messages: int = 0
    session_keys: tuple[str, ...] = field(default_factory=tuple)


class PeopleStore:
    """See the module docstring; ``SessionDB.people``."""

    def __init__(self, read: AsyncEngine, writer: Writer, *, sqlite_file: str | None) -> None:
        self._read = read
        self._writer = writer
        self._sqlite_file = sqlite_file

    async def rows(self, person: Person) -> PersonRows:
        """What the SessionDB keeps about ``person``, read in one transaction."""

        def read(conn: Connection) -> PersonRows:
            tx = SqlAlchemyTx(conn)
            found = plan(tx, person)
            return PersonRows(person, {area.name: area.rows(tx, found) for area in DB_AREAS})

        async with self._read.connect() as conn:
            return await conn.run_sync(read)

    async def forget(self, person: Person, ctx: ForgetContext) -> Forgotten:
        """Delete ``person``'s rows in every area, in one write transaction."""
        sqlite = self._sqlite_file is not None
        return await self._writer.run(lambda tx: _forget(tx, person, ctx, sqlite=sqlite))

    async def prune(self, ended_before: float, limit: int) -> Pruned:
        """Delete up to ``limit`` sessions ended before ``ended_before``, oldest first."""
        sqlite = self._sqlite_file is not None
        return await self._writer.run(lambda tx: _prune(tx, ended_before, limit, sqlite=sqlite))

    async def reclaim(self) -> None:
        """After a forgetting: move the WAL into the database file and empty it (SQLite;
        best effort while readers hold old snapshots). Nothing to do on PostgreSQL."""
        if self._sqlite_file is not None:
            await asyncio.to_thread(_checkpoint, self._sqlite_file)


def _forget(tx: Tx, person: Person, ctx: ForgetContext, *, sqlite: bool) -> Forgotten:
    if sqlite:
        tx.execute("PRAGMA secure_delete = ON", {})
    found = plan(tx, person)
    keys = _keys(tx, [*found.alone, *found.shared])
    waiting = tx.scalar(
        "SELECT count(*) FROM inbox WHERE platform = :platform AND user_id = :user_id "
        "AND status = 'pending'",
        found.params(),
    )
    counts = {area.name: area.forget(tx, found, ctx) for area in DB_AREAS}
    prompts.prune(tx, lock=not sqlite)  # their prompts (a USER.md snapshot) go with them
    if sqlite:
        _optimize(tx)
    return Forgotten(counts, keys, int(waiting or 0))


def _keys(tx: Tx, session_ids: list[str]) -> tuple[str, ...]:
    keys = set()
    for session_id in session_ids:
        key = tx.scalar("SELECT session_key FROM sessions WHERE id = :id", {"id": session_id})
        if key is not None:
            keys.add(str(key))
    return tuple(sorted(keys))


def _optimize(tx: Tx) -> None:
    for table in _FTS_TABLES:
        exists = tx.scalar(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name", {"name": table}
        )
        if exists:
            tx.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')", {})


def _prune(tx: Tx, ended_before: float, limit: int, *, sqlite: bool) -> Pruned:
    rows = tx.fetch(
        "SELECT id, session_key FROM sessions WHERE ended_at IS NOT NULL AND ended_at < :before "
        "ORDER BY ended_at LIMIT :limit",
        {"before": ended_before, "limit": limit},
    )
    messages = sum(drop_session(tx, row["id"]) for row in rows)
    prompts.prune(tx, lock=not sqlite)
    keys = tuple(sorted({str(row["session_key"]) for row in rows}))
    return Pruned(len(rows), messages, keys)


def _checkpoint(path: str) -> None:
    with closing(sqlite3.connect(path, timeout=5)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
