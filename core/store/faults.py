"""Telling "the store cannot write now" apart from a bug, by the driver's error codes.

``classify`` maps a driver error to a ``core.errors.StoreUnavailable`` of the right kind
(disk full, locked, read-only, unreachable), or None when the error is not one of those:
a constraint violation or a malformed statement is a bug in chatgate and must surface
as one. SQLite is read by its result code (``sqlite_errorcode``), PostgreSQL by its
SQLSTATE; no error is told apart by its message text.
"""

from __future__ import annotations

import os
import sqlite3

from sqlalchemy.exc import DBAPIError

from core.errors import (
    StoreFull,
    StoreLocked,
    StoreReadOnly,
    StoreUnavailable,
    StoreUnreachable,
)

_SQLITE_KINDS: dict[int, type[StoreUnavailable]] = {
    sqlite3.SQLITE_FULL: StoreFull,
    sqlite3.SQLITE_BUSY: StoreLocked,
    sqlite3.SQLITE_LOCKED: StoreLocked,
    sqlite3.SQLITE_READONLY: StoreReadOnly,
    sqlite3.SQLITE_IOERR: StoreUnreachable,
    sqlite3.SQLITE_CANTOPEN: StoreUnreachable,
}

# SQLSTATE classes and codes (PostgreSQL appendix A).
_PG_CODES: dict[str, type[StoreUnavailable]] = {
    "53100": StoreFull,  # disk_full
    "25006": StoreReadOnly,  # read_only_sql_transaction
    "55P03": StoreLocked,  # lock_not_available
    "57P01": StoreUnreachable,  # admin_shutdown
    "57P02": StoreUnreachable,  # crash_shutdown
    "57P03": StoreUnreachable,  # cannot_connect_now
}
_PG_CLASSES: dict[str, type[StoreUnavailable]] = {
    "08": StoreUnreachable,  # connection exception
    "53": StoreFull,  # insufficient resources
}


def classify(exc: BaseException, path: str | None = None) -> StoreUnavailable | None:
    """The ``StoreUnavailable`` that ``exc`` (raised by a write) means, or None for a
    bug. ``path`` is the SQLite database file, named in a disk-full error's path."""
    if isinstance(exc, StoreUnavailable):
        return exc
    if isinstance(exc, DBAPIError):
        found = classify(exc.orig, path) if exc.orig is not None else None
        if found is None and exc.connection_invalidated:
            found = StoreUnreachable(exc.__class__.__name__)
        return found
    if isinstance(exc, sqlite3.Error):
        return _sqlite(exc, path)
    sqlstate = getattr(exc, "sqlstate", None)
    if isinstance(sqlstate, str):
        return _postgres(exc, sqlstate)
    if isinstance(exc, OSError):  # connection refused or reset, a socket timeout
        return StoreUnreachable(exc.__class__.__name__)
    return None


def _sqlite(exc: sqlite3.Error, path: str | None) -> StoreUnavailable | None:
    code = getattr(exc, "sqlite_errorcode", None)
    kind = _SQLITE_KINDS.get(code & 0xFF) if isinstance(code, int) else None
    if kind is None:
        return None
    where = os.path.dirname(path) if kind is StoreFull and path else path
    return kind(str(exc), path=where or None)


def _postgres(exc: BaseException, sqlstate: str) -> StoreUnavailable | None:
    kind = _PG_CODES.get(sqlstate) or _PG_CLASSES.get(sqlstate[:2])
    if kind is None:
        return None
    return kind(f"SQLSTATE {sqlstate} ({exc.__class__.__name__})")


def again(problem: StoreUnavailable) -> StoreUnavailable:
    """The same problem as a new error, for one more caller to raise."""
    return type(problem)(problem.detail, path=problem.path)
