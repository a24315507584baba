"""A write no one waits on (``later``) rides with the SQLite writer's next transaction
instead of starting one of its own (``core.store.drain``)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

from core.store.tx import Tx
from core.store.writer import GroupWriter, SqliteRunner


class CountingRunner(SqliteRunner):
    """The real runner, counting how often the writer's thread is set going."""

    starts = 0

    def start(self, work: Callable[[], None]) -> None:
        self.starts += 1
        super().start(work)


def _make(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")


def _note(body: str) -> Callable[[Tx], None]:
    return lambda tx: tx.execute("INSERT INTO notes (body) VALUES (:body)", {"body": body})


def _bodies(path: Path) -> list[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return [row[0] for row in conn.execute("SELECT body FROM notes ORDER BY id")]


async def test_a_later_write_waits_for_the_next_and_commits_with_it(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    _make(path)
    runner = CountingRunner(str(path), busy_timeout_ms=1000)
    async with GroupWriter(runner) as writer:
        later = writer.submit(_note("delivered"), later=True)
        assert runner.starts == 0  # nothing set going for it
        await writer.run(_note("accepted"))
        await later
        assert runner.starts == 1
        assert writer.commits == 1
    assert _bodies(path) == ["delivered", "accepted"]


async def test_a_later_write_alone_still_commits(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    _make(path)
    async with GroupWriter(SqliteRunner(str(path), busy_timeout_ms=1000)) as writer:
        await asyncio.wait_for(writer.submit(_note("alone"), later=True), 10)
        assert writer.commits == 1
    assert _bodies(path) == ["alone"]
