"""Database engines with the connection settings the SessionDB relies on.

SQLite gets two engines on one file: a single-connection writer whose transactions
begin IMMEDIATE (a deferred read-then-write transaction fails under concurrent
writers even with a busy timeout), and a pool of readers that never block it in WAL
mode. PostgreSQL gets one pooled engine used for both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from core.record import record


@record
class Engines:
    """The engine writes go through and the engine reads go through."""

    write: AsyncEngine
    read: AsyncEngine

    @property
    def dialect(self) -> str:
        return self.write.dialect.name

    async def dispose(self) -> None:
        await self.write.dispose()
        if self.read is not self.write:
            await self.read.dispose()


def async_url(url: str) -> str:
    """Pick the async driver for a plain ``sqlite://`` or ``postgresql://`` URL."""
    parsed = make_url(url)
    if parsed.drivername == "sqlite":
        return parsed.set(drivername="sqlite+aiosqlite").render_as_string(hide_password=False)
    if parsed.drivername in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)
    return url


def create_engines(url: str, *, busy_timeout_ms: int = 5000) -> Engines:
    """Create the engines for ``url`` (SQLite file or PostgreSQL)."""
    url = async_url(url)
    if make_url(url).get_backend_name() != "sqlite":
        engine = create_async_engine(
            url, pool_size=10, max_overflow=10, pool_pre_ping=True, hide_parameters=True
        )
        return Engines(write=engine, read=engine)
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    # hide_parameters: a failed statement's error (logged, or raised as a StoreError)
    # would otherwise quote its parameters, message text among them.
    write = create_async_engine(url, pool_size=1, max_overflow=0, hide_parameters=True)
    read = create_async_engine(url, pool_size=4, max_overflow=4, hide_parameters=True)
    _configure_sqlite(write, busy_timeout_ms, begin="BEGIN IMMEDIATE")
    _configure_sqlite(read, busy_timeout_ms, begin="BEGIN")
    return Engines(write=write, read=read)


def sqlite_pragmas(busy_timeout_ms: int) -> list[str]:
    """The settings every SessionDB SQLite connection runs with."""
    return [
        "PRAGMA journal_mode=WAL",
        "PRAGMA synchronous=NORMAL",
        "PRAGMA foreign_keys=ON",
        f"PRAGMA busy_timeout={int(busy_timeout_ms)}",
    ]


def sqlite_path(url: str) -> str | None:
    """The database file of a SQLite URL, or None for other databases."""
    parsed = make_url(async_url(url))
    return parsed.database if parsed.get_backend_name() == "sqlite" else None


def _configure_sqlite(engine: AsyncEngine, busy_timeout_ms: int, *, begin: str) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take BEGIN away from the driver so we choose the transaction kind ourselves.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in sqlite_pragmas(busy_timeout_ms):
            cursor.execute(pragma)
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql(begin)
