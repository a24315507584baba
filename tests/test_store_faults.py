"""Which store errors mean "cannot write now" and which are bugs, from real driver errors."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy.exc import OperationalError

from core.errors import StoreFull, StoreLocked, StoreReadOnly, StoreUnreachable
from core.store.faults import classify


def raised(action: Callable[[], object]) -> BaseException:
    with pytest.raises(Exception) as caught:  # noqa: PT011 - the error is the subject
        action()
    return caught.value


def database(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    return path


def test_a_write_lock_held_elsewhere_is_locked(tmp_path: Path) -> None:
    path = database(tmp_path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        found = classify(raised(lambda: other.execute("BEGIN IMMEDIATE")), str(path))
    finally:
        other.close()
        holder.close()
    assert isinstance(found, StoreLocked)
    assert str(found).startswith("database locked")


def test_a_read_only_database_is_read_only(tmp_path: Path) -> None:
    path = database(tmp_path)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        found = classify(raised(lambda: conn.execute("INSERT INTO t (id) VALUES (1)")), str(path))
    finally:
        conn.close()
    assert isinstance(found, StoreReadOnly)
    assert found.path == str(path)


def test_a_full_database_names_its_directory(tmp_path: Path) -> None:
    path = database(tmp_path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")  # the file may not grow: SQLITE_FULL
        big = ("x" * 100_000,)
        found = classify(
            raised(lambda: conn.execute("INSERT INTO t (v) VALUES (?)", big)), str(path)
        )
    finally:
        conn.close()
    assert isinstance(found, StoreFull)
    assert found.path == str(tmp_path)


def test_a_bug_is_not_an_outage(tmp_path: Path) -> None:
    conn = sqlite3.connect(database(tmp_path))
    try:
        conn.execute("INSERT INTO t (id) VALUES (1)")
        assert classify(raised(lambda: conn.execute("INSERT INTO t (id) VALUES (1)"))) is None
        assert classify(raised(lambda: conn.execute("SELEKT 1"))) is None
    finally:
        conn.close()
    assert classify(ValueError("a bug")) is None


def test_postgres_errors_are_read_by_sqlstate() -> None:
    assert isinstance(classify(asyncpg.exceptions.DiskFullError()), StoreFull)
    assert isinstance(classify(asyncpg.exceptions.ReadOnlySQLTransactionError()), StoreReadOnly)
    assert isinstance(classify(asyncpg.exceptions.LockNotAvailableError()), StoreLocked)
    assert isinstance(classify(asyncpg.exceptions.AdminShutdownError()), StoreUnreachable)
    assert classify(asyncpg.exceptions.UniqueViolationError()) is None
    wrapped = OperationalError("INSERT", {}, ConnectionRefusedError(111, "refused"))
    assert isinstance(classify(wrapped), StoreUnreachable)
