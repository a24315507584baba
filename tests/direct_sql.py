"""Tests' own way into a SessionDB's tables: plant rows and read them back, by URL.

The store keeps its engines to itself, so a test that must see (or seed) rows no store
method shows opens its own engines on the same database URL. They are built the way
the store builds its own (``create_engines``), so SQLite connections run in WAL mode
with a busy timeout beside the SessionDB's writer.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

from sqlalchemy import Executable, Row
from sqlalchemy.ext.asyncio import AsyncConnection

from core.store.engine import create_engines


class DirectSql:
    """The test's own engines on one database; use as an async context manager."""

    def __init__(self, url: str) -> None:
        self._engines = create_engines(url)

    async def __aenter__(self) -> DirectSql:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._engines.dispose()

    def connect(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """A connection for reading (its transaction is rolled back when it closes)."""
        return self._engines.read.connect()

    def begin(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """A write transaction, committed when the block ends without an error."""
        return self._engines.write.begin()

    async def rows(self, stmt: Executable) -> list[Row[Any]]:
        async with self.connect() as conn:
            return list(await conn.execute(stmt))

    async def scalar(self, stmt: Executable) -> Any:
        async with self.connect() as conn:
            return (await conn.execute(stmt)).scalar_one()


async def read_rows(url: str, stmt: Executable) -> list[Row[Any]]:
    """The rows ``stmt`` selects from the database at ``url``, on a connection of its own."""
    async with DirectSql(url) as sql:
        return await sql.rows(stmt)
