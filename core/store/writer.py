"""Group commit: many callers' writes share one transaction, each still durable.

A caller hands ``run`` an operation (a function of one ``Tx``) and gets its result
once the transaction that ran it has committed. Operations queued while a
transaction is in flight are committed together in the next one, so a busy gateway
pays one commit for many turns while an idle one pays no extra latency.

Operations must only touch the database: when one raises, the batch is rolled back
and every operation of it is re-run alone, so the failure reaches only its caller.
When the batch failed because the store cannot write (``core.store.faults``: disk
full, locked, read-only, unreachable), nothing is re-run: every caller of the batch
gets the ``StoreUnavailable`` at once, ``StoreHealth`` records it, and until its probe
write succeeds new writes fail fast rather than each waiting out the busy timeout.

Two runners execute batches. On SQLite one stdlib connection lives in one thread,
which drains the queue itself (``core.store.drain``) and starts the next transaction
the moment one commits (WAL checkpoints run beside it: ``core.store.checkpoint``). On
PostgreSQL a task on the event loop takes each batch from a ``Mailbox`` and runs it on
a SQLAlchemy connection inside ``run_sync``.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, Protocol, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from core.errors import StoreError, StoreUnavailable
from core.mailbox import Mailbox
from core.store.checkpoint import EVERY_COMMITS, LIMIT_FRAMES, Checkpointer
from core.store.drain import Drain, Outcome, Pending
from core.store.drain import WriteOp as WriteOp  # re-exported: the type of a write
from core.store.engine import sqlite_pragmas
from core.store.faults import again, classify
from core.store.health import StoreHealth
from core.store.search import queue as search_queue
from core.store.tx import SqlAlchemyTx, SqliteTx, Tx

T = TypeVar("T")

log = logging.getLogger(__name__)


class Writer(Protocol):
    """What a repository needs in order to write: ``op`` committed, its result returned."""

    async def run(self, op: WriteOp[T]) -> T: ...

    def submit(self, op: WriteOp[T], *, later: bool = False) -> asyncio.Future[T]: ...


class BatchRunner(Protocol):
    """Runs a list of operations in one transaction and returns their results."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def run_batch(self, ops: Sequence[WriteOp[Any]]) -> list[Any]: ...


class SqliteRunner:
    """One stdlib sqlite3 connection, owned by one thread, with the SessionDB PRAGMAs."""

    def __init__(
        self,
        path: str,
        *,
        busy_timeout_ms: int,
        checkpoint_every: int = EVERY_COMMITS,
        wal_limit_frames: int = LIMIT_FRAMES,
    ) -> None:
        self._path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="sessiondb-writer")
        self._conn: sqlite3.Connection | None = None
        self._indexing = False  # the database queues messages for search (``idle``)
        self._queued = 0  # messages this writer stored and ``idle`` has not indexed yet
        self.checkpointer = Checkpointer(
            self._open_connection, every_commits=checkpoint_every, limit_frames=wal_limit_frames
        )

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        self._conn = await loop.run_in_executor(self._thread, self._connect)

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        if self._conn is not None:
            await loop.run_in_executor(self._thread, self._index_backlog)
        await loop.run_in_executor(None, self.checkpointer.close)
        if self._conn is not None:
            await loop.run_in_executor(self._thread, self._conn.close)
            self._conn = None
        self._thread.shutdown(wait=True)

    async def run_batch(self, ops: Sequence[WriteOp[Any]]) -> list[Any]:
        return await asyncio.get_running_loop().run_in_executor(self._thread, self.commit, ops)

    def start(self, work: Callable[[], None]) -> None:
        """Run ``work`` in the writer's thread, after whatever it is doing."""
        self._thread.submit(work)

    def _connect(self) -> sqlite3.Connection:
        conn = self._open_connection()
        conn.execute("PRAGMA wal_autocheckpoint=0")  # the checkpointer's work, not a commit's
        self._conn = conn
        self._indexing = search_queue.has_queue(conn)
        self._index_backlog()  # what a killed gateway left queued
        return conn

    def _open_connection(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        for pragma in sqlite_pragmas(self._busy_timeout_ms):
            conn.execute(pragma)
        return conn

    def idle(self) -> bool:
        """Work for the writer's thread between batches (``core.store.drain``): index a
        few queued messages for search (``core.store.search.queue``). True while more may
        be queued."""
        if not self._queued:
            return False
        done = self._index_chunk()
        if done is None:  # retried after the next commit; a search indexes everything
            return False
        self._queued = max(self._queued - done, 0) if done >= search_queue.CHUNK else 0
        return self._queued > 0

    def behind(self) -> bool:
        """Whether so many stored messages wait for indexing that it goes before the next
        batch rather than waiting for a moment with none (a writer never idle)."""
        return self._queued >= search_queue.BEHIND

    def _index_backlog(self) -> None:
        """Index everything queued (at open and close), whoever queued it."""
        while (done := self._index_chunk()) is not None and done >= search_queue.CHUNK:
            pass
        self._queued = 0

    def _index_chunk(self) -> int | None:
        """Index a chunk of queued messages; how many, or None when it could not."""
        conn = self._conn
        if conn is None or not self._indexing:
            return None
        try:
            done = search_queue.index_some(conn)
        except sqlite3.Error as exc:
            log.warning("search indexing postponed: %s", exc.__class__.__name__)
            return None
        self.checkpointer.committed(conn)
        return done

    def commit(self, ops: Sequence[WriteOp[Any]]) -> list[Any]:
        """Run ``ops`` in one transaction and return their results; in the writer's thread."""
        conn = self._conn
        if conn is None:
            raise StoreError("the SessionDB writer is closed")
        tx = SqliteTx(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            results = [op(tx) for op in ops]
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if self._indexing:
            self._queued += tx.added_messages
        self.checkpointer.committed(conn)
        return results


class SqlAlchemyRunner:
    """Batches on a pooled SQLAlchemy engine (PostgreSQL)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def run_batch(self, ops: Sequence[WriteOp[Any]]) -> list[Any]:
        def batch(conn: Connection) -> list[Any]:
            tx = SqlAlchemyTx(conn)
            return [op(tx) for op in ops]

        async with self._engine.begin() as conn:
            return await conn.run_sync(batch)


def _no_op(tx: Tx) -> None:
    """A probe that only takes the write lock (``SessionDB`` writes a row instead)."""


class GroupWriter:
    """The single writer of a SessionDB; see the module docstring."""

    def __init__(
        self,
        runner: BatchRunner,
        *,
        max_batch: int = 256,
        health: StoreHealth | None = None,
        path: str | None = None,
        probe: WriteOp[None] = _no_op,
    ) -> None:
        self._runner = runner
        self._max_batch = max_batch
        self._health = health or StoreHealth()
        self._health.probe_with(lambda: self.run(probe, probe=True))
        self._path = path  # the SQLite file, named when the disk is full
        self._queue: Mailbox[Pending[Any]] = Mailbox()
        self._task: asyncio.Task[None] | None = None
        self._drain: Drain | None = None  # SQLite: the thread drains, no task
        self._open = False
        self.commits = 0

    async def __aenter__(self) -> GroupWriter:
        await self._runner.open()
        if isinstance(self._runner, SqliteRunner):
            self._drain = Drain(
                self._runner,
                self._deliver,
                max_batch=self._max_batch,
                path=self._path,
            )
        else:
            self._task = asyncio.create_task(self._loop(), name="sessiondb-writer")
        self._open = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._health.close()  # no more probes
        await self._queue.join()
        self._open = False
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._runner.close()

    async def run(self, op: WriteOp[T], *, probe: bool = False, later: bool = False) -> T:
        """Run ``op`` in a write transaction and return its result after commit.

        Raises ``StoreUnavailable`` at once while the store is known not to write, unless
        ``op`` is the health tracker's ``probe``."""
        # A cancelled caller cancels only its own future: the op stays in its batch and
        # commits with the others (results are never set on a future that is done).
        return await self.submit(op, probe=probe, later=later)

    def submit(
        self, op: WriteOp[T], *, probe: bool = False, later: bool = False
    ) -> asyncio.Future[T]:
        """Queue ``op`` for the next transaction; its future settles after the commit.
        For a caller that need not wait (no task of its own just to wait); raises as
        ``run`` does. ``later``: no one waits on it, so on SQLite it need not start a
        transaction of its own (``core.store.drain``)."""
        if not self._open or (self._task is not None and self._task.done()):
            raise StoreError("the SessionDB writer is not running")
        refused = None if probe else self._health.unavailable()
        if refused is not None:
            raise refused
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        pending = Pending(op, future, probe)
        # Counted in the mailbox either way: ``join`` waits for the thread's writes too.
        if self._drain is not None:
            self._queue.counted()
            self._drain.put(pending, later=later)
        else:
            self._queue.put(pending)
        return future

    def _deliver(self, outcomes: list[Outcome]) -> None:
        """On the loop: settle what the writer's thread did (``core.store.drain``)."""
        handled = 0
        for outcome in outcomes:
            handled += len(outcome.items)
            if outcome.results is not None:
                self._committed(outcome.items, outcome.results)
            elif outcome.problem is not None and outcome.refused:
                for item in outcome.items:
                    _settle_error(item, again(outcome.problem))
            elif outcome.problem is not None:
                self._unavailable(outcome.items, outcome.problem, outcome.error or outcome.problem)
            elif outcome.error is not None:
                log.debug("write failed: %r", outcome.error)
                _settle_error(outcome.items[0], outcome.error)
        self._queue.done(handled)

    async def _loop(self) -> None:
        while True:
            batch = await self._queue.take(self._max_batch)
            try:
                await self._commit(batch)
            finally:
                self._queue.done(len(batch))

    async def _commit(self, batch: list[Pending[Any]]) -> None:
        batch = self._fail_fast(batch)
        if not batch:
            return
        try:
            results = await self._runner.run_batch([item.op for item in batch])
        except Exception as exc:  # any failure must reach its caller, never kill the writer
            unavailable = classify(exc, self._path)
            if unavailable is not None:
                self._unavailable(batch, unavailable, exc)
                return
            if len(batch) > 1:
                for item in batch:
                    await self._commit([item])
                return
            log.debug("write failed: %r", exc)
            _settle_error(batch[0], exc)
            return
        self._committed(batch, results)

    def _committed(self, batch: list[Pending[Any]], results: list[Any]) -> None:
        self.commits += 1
        self._health.succeeded()
        for item, result in zip(batch, results, strict=True):
            if not item.future.done():
                item.future.set_result(result)

    def _fail_fast(self, batch: list[Pending[Any]]) -> list[Pending[Any]]:
        """Settle what was queued before the store was known unwritable; keep probes."""
        if self._health.problem is None:
            return batch
        for item in batch:
            refused = self._health.unavailable()
            if not item.probe and refused is not None:
                _settle_error(item, refused)
        return [item for item in batch if item.probe]

    def _unavailable(
        self, batch: list[Pending[Any]], problem: StoreUnavailable, exc: BaseException
    ) -> None:
        if problem is not exc:
            problem.__cause__ = exc
        self._health.failed(problem)
        for item in batch:
            error = again(problem)
            error.__cause__ = exc
            _settle_error(item, error)


def _settle_error(item: Pending[Any], exc: BaseException) -> None:
    if item.future.done():
        return
    if isinstance(exc, StoreError):
        item.future.set_exception(exc)
        return
    error = StoreError(f"SessionDB write failed: {exc.__class__.__name__}: {exc}")
    error.__cause__ = exc
    item.future.set_exception(error)
