"""The SessionDB schema's revision: brought up to date, and read back for ``chatgate db``.

The store's door to the Alembic migrations (``migrations/runner.py``): callers outside
the store hand over a database URL and never build an engine themselves. Each call
opens its own short-lived engines, since it runs before (or without) a SessionDB.
"""

from __future__ import annotations

from sqlalchemy.exc import SQLAlchemyError

from core.errors import StoreError
from core.store.engine import create_engines
from core.store.lease import MIGRATION_KEY
from core.store.location import error_reason, redacted_url
from migrations.runner import (
    Progress,
    current_revision,
    downgrade,
    head_revision,
    history,
    upgrade,
)


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
        await upgrade(engines.write, lock_key=MIGRATION_KEY, progress=progress)
    except (SQLAlchemyError, OSError) as exc:
        where = redacted_url(url)
        raise StoreError(f"cannot open the SessionDB at {where}: {error_reason(exc)}") from exc
    finally:
        await engines.dispose()


async def downgrade_schema(url: str, revision: str) -> None:
    """Take the schema of the database at ``url`` back to ``revision`` ("base": empty).

    Raises ``StoreError`` with one line when the database cannot be opened or the
    revision is unknown.
    """
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
    return history()


async def schema_revision(url: str) -> str | None:
    """The revision the database at ``url`` is at, or None before the first migration."""
    engines = create_engines(url)
    try:
        return await current_revision(engines.read)
    except (SQLAlchemyError, OSError) as exc:
        where = redacted_url(url)
        raise StoreError(f"cannot open the SessionDB at {where}: {error_reason(exc)}") from exc
    finally:
        await engines.dispose()


def code_revision() -> str | None:
    """The newest revision this build of chatgate knows."""
    return head_revision()
