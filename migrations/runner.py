"""Apply the Alembic migrations to a SessionDB, at start-up and from ``chatgate db``."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

_HERE = Path(__file__).resolve().parent


def _config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(_HERE))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str | None:
    """The newest revision this build of chatgate knows."""
    return ScriptDirectory.from_config(_config()).get_current_head()


Progress = Callable[[int, int], None]


async def upgrade(
    engine: AsyncEngine,
    revision: str = "head",
    *,
    lock_key: int = 0,
    progress: Progress | None = None,
) -> None:
    """Bring the schema up to ``revision`` (idempotent).

    On PostgreSQL the upgrade first takes the transaction-level advisory lock
    ``lock_key``: simultaneous upgrades then run one after another, the later ones
    finding nothing to do, instead of racing to create the same tables. (SQLite's
    ``BEGIN IMMEDIATE`` on the writer already serialises them.)

    ``progress(applied, pending)`` is called after each revision is applied.
    """
    async with engine.begin() as conn:
        if lock_key and conn.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": lock_key})
        await conn.run_sync(lambda sync: command.upgrade(_stepped(sync, progress), revision))


def _stepped(connection: Connection, progress: Progress | None) -> Config:
    cfg = _config(connection)
    if progress is None:
        return cfg
    current = MigrationContext.configure(connection).get_current_revision()
    scripts = ScriptDirectory.from_config(cfg)
    pending = len(list(scripts.iterate_revisions("heads", current)))
    applied = itertools.count(1)

    def step(**_: Any) -> None:
        progress(next(applied), pending)

    cfg.attributes["on_version_apply"] = (step,)
    return cfg


def history() -> list[tuple[str, str]]:
    """Every revision this build knows, oldest first, with its one-line message."""
    scripts = ScriptDirectory.from_config(_config())
    revisions = reversed(list(scripts.walk_revisions()))
    return [(rev.revision, (rev.doc or "").splitlines()[0] if rev.doc else "") for rev in revisions]


async def downgrade(engine: AsyncEngine, revision: str, *, lock_key: int = 0) -> None:
    """Take the schema back to ``revision`` ("base": before the first migration)."""
    async with engine.begin() as conn:
        if lock_key and conn.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": lock_key})
        await conn.run_sync(lambda sync: command.downgrade(_config(sync), revision))


async def current_revision(engine: AsyncEngine) -> str | None:
    """The revision the database is at, or None before the first migration."""
    async with engine.connect() as conn:
        return await conn.run_sync(
            lambda sync: MigrationContext.configure(sync).get_current_revision()
        )
