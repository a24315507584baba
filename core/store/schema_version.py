"""The SessionDB schema's revision: brought up to date, and read back for ``chatgate db``.

The store's door to the Alembic migrations (``migrations/runner.py``): callers outside
the store hand over a database URL and never build an engine themselves. Each call
opens its own short-lived engines, since it runs before (or without) a SessionDB.

Alembic is imported only when there is something to migrate: a start on a database
already at this build's head compares the stored revision with the head read from the
revision files (``migrations.heads``), one query, instead of importing Alembic and
walking its script directory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from core.errors import StoreError
from core.store.engine import create_engines
from core.store.lease import MIGRATION_KEY
from core.store.location import error_reason, redacted_url
from migrations import heads

if TYPE_CHECKING:
    from migrations.runner import Progress

VERSION_TABLE = "alembic_version"


async def upgrade_schema(
    url: str, *, busy_timeout_ms: int = 5000, progress: Progress | None = None
) -> None:
    """Bring the schema of the database at ``url`` up to this build's newest revision.

    Raises ``StoreError`` with one line (the database, its password hidden, and the root
    cause) when the database cannot be opened or migrated. ``progress(applied, pending)``
    follows the revisions as they are applied.
    """
    engines = create_engines(url, busy_timeout_ms=busy_timeout_ms)
    try:
        if await _at_head(engines.write):
            return
        from migrations.runner import upgrade

        await upgrade(engines.write, lock_key=MIGRATION_KEY, progress=progress)
    except (SQLAlchemyError, OSError) as exc:
        where = redacted_url(url)
        raise StoreError(f"cannot open the SessionDB at {where}: {error_reason(exc)}") from exc
    finally:
        await engines.dispose()


async def _at_head(engine: AsyncEngine) -> bool:
    """Whether the database already stands at this build's one head revision."""
    head = heads.head_revision()
    return head is not None and await _stored(engine) == [head]


async def _stored(engine: AsyncEngine) -> list[str] | None:
    """The revisions the database records (Alembic's table), or None without the table."""
    async with engine.connect() as conn:
        if not await conn.run_sync(lambda sync: inspect(sync).has_table(VERSION_TABLE)):
            return None
        rows = (await conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}"))).all()
    return [str(row[0]) for row in rows]


async def downgrade_schema(url: str, revision: str) -> None:
    """Take the schema of the database at ``url`` back to ``revision`` ("base": empty).

    Raises ``StoreError`` with one line when the database cannot be opened or the
    revision is unknown.
    """
    from migrations.runner import downgrade, history

    if revision != "base" and revision not in dict(history()):
        raise StoreError(f"no migration {revision!r} (see chatgate db history)")
    engines = create_engines(url)
    try:
        await downgrade(engines.write, revision, lock_key=MIGRATION_KEY)
    except (SQLAlchemyError, OSError) as exc:
        where = redacted_url(url)
        raise StoreError(f"cannot downgrade the SessionDB at {where}: {error_reason(exc)}") from exc
    finally:
        await engines.dispose()


def migration_history() -> list[tuple[str, str]]:
    """Every revision this build knows, oldest first: (revision, one-line message)."""
    from migrations.runner import history

    return history()


async def schema_revision(url: str) -> str | None:
    """The revision the database at ``url`` is at, or None before the first migration."""
    engines = create_engines(url)
    try:
        stored = await _stored(engines.read)
        if stored is None or len(stored) <= 1:
            return stored[0] if stored else None
        from migrations.runner import current_revision  # several heads: Alembic's error

        return await current_revision(engines.read)
    except (SQLAlchemyError, OSError) as exc:
        where = redacted_url(url)
        raise StoreError(f"cannot open the SessionDB at {where}: {error_reason(exc)}") from exc
    finally:
        await engines.dispose()


def code_revision() -> str | None:
    """The newest revision this build of chatgate knows."""
    head = heads.head_revision()
    if head is not None:
        return head
    from migrations.runner import head_revision  # read the files and unsure: Alembic's answer

    return head_revision()
