"""WAL checkpoints of the SessionDB's SQLite file run beside the writer, not in its commits
(``core.store.checkpoint``), and the log stays bounded."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import cast

from core.store.checkpoint import Checkpointer
from core.store.tx import Tx
from core.store.writer import GroupWriter, SqliteRunner

PAGE = 4096
ROW = b"\x01" * (4 * PAGE)  # a commit of about four log frames


def _make(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB)")


def _insert(tx: Tx) -> None:
    tx.execute("INSERT INTO blobs (body) VALUES (:body)", {"body": ROW})


async def _commit(writer: GroupWriter, times: int) -> None:
    for _ in range(times):
        await writer.run(_insert)


def _wal(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


async def test_commits_leave_the_log_alone_however_long_it_grows(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    _make(path)
    before = path.stat().st_size
    runner = SqliteRunner(str(path), busy_timeout_ms=1000, checkpoint_every=10**9)
    async with GroupWriter(runner) as writer:
        # ~1,200 frames: past SQLite's default of 1,000, where a commit would checkpoint.
        await _commit(writer, 300)
        assert path.stat().st_size == before
        assert _wal(path).stat().st_size > 1000 * PAGE
        assert runner.checkpointer.checkpoints == 0


async def test_the_checkpointer_copies_the_log_into_the_file_while_writes_go_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    _make(path)
    before = path.stat().st_size
    runner = SqliteRunner(str(path), busy_timeout_ms=1000, checkpoint_every=8)
    async with GroupWriter(runner) as writer:
        await _commit(writer, 64)
        runner.checkpointer.wait()
        assert runner.checkpointer.checkpoints >= 1
        # At least the first eight commits' rows are in the database file itself.
        assert path.stat().st_size >= before + 8 * len(ROW)
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as reader:
            assert reader.execute("SELECT count(*) FROM blobs").fetchone()[0] == 64


async def test_the_log_stays_bounded_when_background_checkpoints_fall_behind(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    _make(path)
    runner = SqliteRunner(str(path), busy_timeout_ms=1000, checkpoint_every=1, wal_limit_frames=40)
    async with GroupWriter(runner) as writer:
        await _commit(writer, 400)  # ~1,600 frames written in all
        runner.checkpointer.wait()
        # Past the limit the writer checkpoints between two transactions, where nothing
        # races it, and the next transaction starts the log over.
        assert _wal(path).stat().st_size < 200 * PAGE


class _SlowCheckpoints:
    """A connection whose checkpoints take 50 ms, as on a slow or busy disk."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str) -> sqlite3.Cursor:
        if "wal_checkpoint" in sql:
            time.sleep(0.05)  # the slow disk this test is about, not a wait for a race
        return self._conn.execute(sql)

    def close(self) -> None:
        self._conn.close()


def test_a_slow_background_checkpoint_is_waited_for_before_the_log_outgrows_its_limit(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    _make(path)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint=0")

    def slow() -> sqlite3.Connection:
        return cast(sqlite3.Connection, _SlowCheckpoints(sqlite3.connect(path)))

    checkpointer = Checkpointer(slow, every_commits=1, limit_frames=40)
    try:
        for _ in range(200):  # ~800 frames, about 1 ms a commit
            writer.execute("INSERT INTO blobs (body) VALUES (?)", (ROW,))
            checkpointer.committed(writer)
        checkpointer.wait()
    finally:
        checkpointer.close()
        writer.close()

    # Skipped while each 50 ms checkpoint ran, the log would have grown by some fifty
    # commits (200 frames) at a time.
    assert _wal(path).stat().st_size < 100 * PAGE
