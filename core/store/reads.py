"""Reads on a turn's path, each one hand-over to a reader thread and back.

Through SQLAlchemy's async engine over aiosqlite, one point read is about ten round
trips between the event loop and the driver's thread (check a connection out, BEGIN,
cursor, execute, fetch, close the cursor, roll back, check it in), and each one wakes
the loop and takes the interpreter's lock from whatever else runs. With the pool's
overflow in use, busy moments also open and throw away whole connections, each with
its own thread. A chat's first turn in a while (its session found, its transcript and
review marks loaded) paid that several times over.

``Reads`` runs a whole read, a plain function of a ``Tx`` that only calls ``scalar``
and ``fetch``, in one go:

- on SQLite, in one of a few threads, each holding one stdlib connection (the
  SessionDB PRAGMAs, plus ``query_only``), inside a read transaction so a read of
  several statements sees one snapshot;
- on PostgreSQL, on a pooled SQLAlchemy connection inside ``run_sync``.

A read the store cannot serve now (SQLite busy or gone, PostgreSQL unreachable) raises
the ``StoreUnavailable`` that ``core.store.faults`` finds for it, so a turn waits and
tries again rather than failing as a bug; any other error is raised as it is.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from core.store.engine import sqlite_pragmas
from core.store.faults import classify
from core.store.tx import SqlAlchemyTx, SqliteTx, Tx

T = TypeVar("T")

ReadOp = Callable[[Tx], T]

# Reads wait on the disk or the CPU, not on each other: two cores gain nothing from
# more threads, and each holds a connection with its own page cache.
READ_THREADS = 4


class Reads(Protocol):
    """Runs a read operation and returns its result."""

    async def run(self, op: ReadOp[T]) -> T: ...

    async def close(self) -> None: ...


class SqliteReads:
    """Read operations on a few stdlib connections to one SQLite file."""

    def __init__(self, path: str, *, busy_timeout_ms: int, threads: int = READ_THREADS) -> None:
        self._path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="sessiondb-reader")
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    async def run(self, op: ReadOp[T]) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._pool, self._read, op)
        except sqlite3.Error as exc:
            unavailable = classify(exc, self._path)
            if unavailable is not None:
                raise unavailable from exc
            raise

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self._shutdown)

    def _shutdown(self) -> None:
        self._pool.shutdown(wait=True)
        with self._lock:
            opened, self._opened = self._opened, []
        for conn in opened:
            conn.close()

    def _read(self, op: ReadOp[T]) -> T:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        try:
            conn.execute("BEGIN")
            try:
                return op(SqliteTx(conn))
            finally:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            # Whatever the connection went through, the next read starts on a new one.
            self._local.conn = None
            self._forget(conn)
            raise

    def _forget(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            if conn in self._opened:
                self._opened.remove(conn)
        conn.close()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._path,
            isolation_level=None,
            check_same_thread=False,
            timeout=self._busy_timeout_ms / 1000,  # until the PRAGMA sets it again
        )
        try:
            for pragma in sqlite_pragmas(self._busy_timeout_ms):
                conn.execute(pragma)
            conn.execute("PRAGMA query_only=ON")  # a read op never writes, by mistake either
        except BaseException:
            conn.close()
            raise
        with self._lock:
            self._opened.append(conn)
        return conn


class EngineReads:
    """Read operations on a pooled SQLAlchemy engine (PostgreSQL)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def run(self, op: ReadOp[T]) -> T:
        def read(conn: Connection) -> T:
            return op(SqlAlchemyTx(conn))

        try:
            async with self._engine.connect() as conn:
                return await conn.run_sync(read)
        except (SQLAlchemyError, OSError) as exc:
            unavailable = classify(exc)
            if unavailable is not None:
                raise unavailable from exc
            raise

    async def close(self) -> None:
        return None  # the engine is the SessionDB's to dispose of
