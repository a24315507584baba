"""The lease a ``chatgate run`` holds on its SessionDB: one gateway per database.

Two gateways on one database recover, order and count each other's turns as their
own; until replicas are designed, the first to start owns the database and any other
is refused with ``DatabaseHeld`` (one line naming the holder).

- PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock`` on a key derived
  from ``"chatgate"``) held on a connection of its own, open for the gateway's life.
  The connection's ``application_name`` says which pid on which host holds it, so a
  refused start can name the holder. The server frees the lock when that connection
  ends, for any reason: so the lease checks the connection every ``check_seconds`` and
  sets ``lost`` the first time it does not answer; the gateway then stops taking work.
- SQLite: ``fcntl.flock`` on ``<db>.lock`` next to the database file, which holds the
  holder's pid and host. The kernel frees it when the process ends, even on ``kill -9``,
  so a restart after a crash never finds a stale lease. A lock file cannot be lost.

Migrations lock on their own key (``MIGRATION_KEY``, in ``migrations/runner.py``), so
simultaneous starts run them one after another whatever the lease says.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import socket
from pathlib import Path
from types import TracebackType
from typing import Protocol

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from core.errors import DatabaseHeld, StoreError
from core.store.engine import async_url, sqlite_path
from core.store.location import error_reason, redacted_url
from core.tasks import TaskSet

log = logging.getLogger(__name__)


def advisory_key(name: str) -> int:
    """A PostgreSQL advisory lock key (a signed 64-bit integer) derived from ``name``."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


LEASE_KEY = advisory_key("chatgate")
MIGRATION_KEY = advisory_key("chatgate:migrations")


def holder_label() -> str:
    """Who this process is, as a refused start reports it."""
    return f"pid {os.getpid()} on {socket.gethostname()}"


class _Backend(Protocol):
    async def acquire(self) -> str | None:
        """Take the lock: None when taken, else who holds it ("" when unknown)."""

    async def alive(self) -> bool:
        """Whether the lock is still ours."""

    async def release(self) -> None: ...


class DatabaseLease:
    """The exclusive lease on the database at ``url`` (see the module docstring).

    ``async with DatabaseLease(url):`` holds it (or raises ``DatabaseHeld``); ``lost`` is
    set if it is lost meanwhile.
    """

    def __init__(self, url: str, *, check_seconds: float = 5.0) -> None:
        self._where = redacted_url(url)
        self._backend = _backend_for(url)
        self._check_seconds = check_seconds
        self._tasks = TaskSet("lease")
        self.lost = asyncio.Event()
        self.held = False

    async def __aenter__(self) -> DatabaseLease:
        holder = await self._backend.acquire()
        if holder is not None:
            raise DatabaseHeld(self._where, holder)
        self.held = True
        self._tasks.spawn(self._watch(), name="watch")
        log.info("holding the lease on the SessionDB at %s", self._where)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._tasks.close()
        self.held = False
        await self._backend.release()

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self._check_seconds)  # the period between checks
            if not await self._alive():
                break
        log.error("lost the lease on the SessionDB at %s: stopping", self._where)
        self.lost.set()

    async def _alive(self) -> bool:
        # A connection to a vanished host may hang rather than fail: bound the check.
        try:
            async with asyncio.timeout(max(self._check_seconds, 5.0)):
                return await self._backend.alive()
        except TimeoutError:
            return False


def _backend_for(url: str) -> _Backend:
    path = sqlite_path(url)
    if path is None:
        return _AdvisoryLock(url)
    if not path or path == ":memory:":
        return _NoLock()  # a private in-memory database: nobody else can open it
    return _FileLock(Path(f"{path}.lock"))


class _NoLock:
    async def acquire(self) -> str | None:
        return None

    async def alive(self) -> bool:
        return True

    async def release(self) -> None:
        return None


class _FileLock:
    """``flock`` on ``path``, whose content names the holder."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = None

    async def acquire(self) -> str | None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            return holder
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"holder": holder_label()}).encode(), 0)
        self._fd = fd
        return None

    async def alive(self) -> bool:
        return True

    async def release(self) -> None:
        if self._fd is not None:
            # The file stays: removing it would let a third process lock a new file
            # while a second still waits on the old one.
            os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None


def _read_holder(fd: int) -> str:
    try:
        holder = json.loads(os.pread(fd, 4096, 0) or b"{}").get("holder", "")
    except (ValueError, AttributeError):  # half written, or not ours
        return ""
    return holder if isinstance(holder, str) else ""


_TRY_LOCK = text("SELECT pg_try_advisory_lock(:key)")
_UNLOCK = text("SELECT pg_advisory_unlock(:key)")
# A bigint advisory key shows in pg_locks as classid (high half) and objid (low half).
_HOLDER = text(
    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
    "AND l.classid::bigint = :high AND l.objid::bigint = :low"
)
_APP_PREFIX = "chatgate "


class _AdvisoryLock:
    """``pg_try_advisory_lock(LEASE_KEY)`` on a connection kept open."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._engine: AsyncEngine | None = None
        self._conn: AsyncConnection | None = None

    async def acquire(self) -> str | None:
        # NullPool: the connection is ours alone and is never handed out again.
        app_name = (_APP_PREFIX + holder_label())[:63]
        engine = create_async_engine(
            async_url(self._url),
            poolclass=NullPool,
            connect_args={"server_settings": {"application_name": app_name}},
        )
        try:
            conn = await engine.connect()
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            if await conn.scalar(_TRY_LOCK, {"key": LEASE_KEY}):
                self._engine, self._conn = engine, conn
                return None
            holder = await conn.scalar(_HOLDER, _key_halves(LEASE_KEY))
            await conn.close()
        except (SQLAlchemyError, OSError) as exc:
            await engine.dispose()
            where, reason = redacted_url(self._url), error_reason(exc)
            raise StoreError(f"cannot open the SessionDB at {where}: {reason}") from exc
        await engine.dispose()
        return str(holder or "").removeprefix(_APP_PREFIX)

    async def alive(self) -> bool:
        if self._conn is None:
            return False
        try:
            await self._conn.scalar(text("SELECT 1"))
        except (SQLAlchemyError, OSError):
            return False
        return True

    async def release(self) -> None:
        conn, engine = self._conn, self._engine
        self._conn = self._engine = None
        if conn is not None:
            # The server frees the lock with the session anyway; unlocking first is tidy.
            with contextlib.suppress(SQLAlchemyError, OSError):
                await conn.scalar(_UNLOCK, {"key": LEASE_KEY})
            with contextlib.suppress(SQLAlchemyError, OSError):
                await conn.close()
        if engine is not None:
            await engine.dispose()


def _key_halves(key: int) -> dict[str, int]:
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    return {"high": unsigned >> 32, "low": unsigned & 0xFFFF_FFFF}
