"""A throwaway PostgreSQL database on the machine's server (127.0.0.1:5432, trust auth)."""

from __future__ import annotations

import secrets
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg  # type: ignore[import-untyped]
import pytest

PG_HOST, PG_PORT = "127.0.0.1", 5432
PG_ADMIN = f"postgresql://postgres@{PG_HOST}:{PG_PORT}/test"


def postgres_reachable() -> bool:
    try:
        with socket.create_connection((PG_HOST, PG_PORT), timeout=1):
            return True
    except OSError:
        return False


@asynccontextmanager
async def postgres_database() -> AsyncIterator[str]:
    """A fresh PostgreSQL database of its own, dropped afterwards."""
    if not postgres_reachable():
        pytest.skip(f"PostgreSQL is not reachable at {PG_HOST}:{PG_PORT}")
    name = f"chatgate_test_{secrets.token_hex(6)}"
    admin = await asyncpg.connect(PG_ADMIN)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield f"postgresql://postgres@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
