"""WAL checkpoints off the SessionDB writer's thread.

SQLite's default copies the write-ahead log back into the database file from inside the
commit that crosses ``wal_autocheckpoint`` pages: that commit then writes megabytes and
waits for ``fdatasync``, and every turn queued behind it waits too. Under webhook load
that was about a tenth of the writer thread's time and the commits that paid it showed in
the latency tail (``bench/throughput.py`` with no checkpoints at all read 9-20 % more
turns a second).

So the writer's connection runs with ``wal_autocheckpoint=0`` and, every
``every_commits`` commits, hands a ``PASSIVE`` checkpoint to a thread and connection of
its own, where it runs beside the next commits (a passive checkpoint takes no lock a
writer waits for). Such a checkpoint copies what it can, but the log starts over only
when everything in it has been copied before the writer's next transaction, which a
steady stream of commits never leaves time for: in a test the log grew without end. So
once the log holds ``limit_frames`` frames the writer runs one checkpoint itself, between
two transactions, where nothing races it. It copies only what the background ones have
not yet, and the next transaction starts the log over. A background checkpoint still
running a whole period later (a slow disk) is waited for, or the log would grow by a
period's commits for as long as the disk stays slow.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

log = logging.getLogger(__name__)

CHECKPOINT = "PRAGMA wal_checkpoint(PASSIVE)"
EVERY_COMMITS = 64
LIMIT_FRAMES = 4_096  # 16 MiB of 4 KiB pages: four times SQLite's own checkpoint point


class Checkpointer:
    """Checkpoints for one SQLite file whose single writer calls ``committed``."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        *,
        every_commits: int = EVERY_COMMITS,
        limit_frames: int = LIMIT_FRAMES,
    ) -> None:
        self._connect = connect
        self._every = every_commits
        self._limit = limit_frames
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="sessiondb-checkpoint")
        self._conn: sqlite3.Connection | None = None  # the checkpoint thread's own
        self._running: Future[None] | None = None
        self._commits = 0
        self.log_frames = 0  # frames in the log at the last checkpoint
        self.checkpoints = 0

    def committed(self, writer: sqlite3.Connection) -> None:
        """The writer committed a transaction (called on the writer's thread)."""
        self._commits += 1
        if self._commits < self._every:
            return
        running = self._running
        if running is not None and not running.done():
            if self._commits < 2 * self._every:
                return
            # A checkpoint slower than a whole period of commits (a slow or busy disk):
            # skipping again would let the log grow without a bound, so the writer waits
            # for it and then looks at the log's size.
            self._finish(running)
        self._commits = 0
        if self.log_frames > self._limit:
            self._run(writer)  # nothing writes while the writer is here
            return
        self._running = self._thread.submit(self._background)

    @staticmethod
    def _finish(running: Future[None]) -> None:
        try:
            running.result()
        except Exception as exc:  # a commit that already happened never fails for it
            log.warning("WAL checkpoint failed: %s", exc.__class__.__name__)

    def wait(self) -> None:
        """Block until the checkpoint in progress, if any, has finished (tests, close)."""
        running = self._running
        if running is not None:
            running.result()

    def close(self) -> None:
        """Finish the checkpoint in progress and close the checkpoint connection."""
        self._thread.submit(self._close).result()
        self._thread.shutdown(wait=True)

    def _background(self) -> None:
        if self._conn is None:
            self._conn = self._connect()
        self._run(self._conn)

    def _run(self, conn: sqlite3.Connection) -> None:
        try:
            row = conn.execute(CHECKPOINT).fetchone()
        except sqlite3.Error as exc:  # the next one tries again; commits never fail for it
            log.warning("WAL checkpoint failed: %s", exc.__class__.__name__)
            return
        self.log_frames = int(row[1])
        self.checkpoints += 1

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
