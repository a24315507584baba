"""The schema's revision as ``chatgate doctor`` reads it: never creating a database that
is not there, and failing with one line rather than a driver's traceback."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from core.errors import StoreError
from core.store.location import error_reason, redacted_url
from core.store.schema_version import code_revision, schema_revision


async def schema_state(url: str) -> tuple[str | None, str | None]:
    """``(the database's revision, this build's)``; the first is None for a database that
    does not exist yet or has never been migrated. ``StoreError`` when it cannot be read."""
    if _missing_sqlite_file(url):
        return None, code_revision()
    try:
        return await schema_revision(url), code_revision()
    except (SQLAlchemyError, OSError) as exc:
        where = redacted_url(url)
        raise StoreError(f"cannot read the SessionDB at {where}: {error_reason(exc)}") from exc


def _missing_sqlite_file(url: str) -> bool:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return False
    return parsed.database != ":memory:" and not Path(parsed.database).exists()
