"""A consistent copy of a SQLite SessionDB taken while the gateway writes to it.

``chatgate backup`` copies the database with SQLite's online backup API
(``sqlite3.Connection.backup``) rather than copying the file: a file copy of a WAL
database misses what is still in ``-wal`` and can tear a page mid-write. The source
connection holds one read transaction for the whole copy, so every step reads the same
WAL snapshot and the copy is the database as it was at one instant (the writer goes on
committing meanwhile; WAL readers never block it). The copy is switched to the rollback
journal so it is one self-contained file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from core.errors import StoreError
from core.store.engine import sqlite_path

# Pages copied per step: small enough for a progress bar to move, large enough that a
# big database is not copied a page at a time.
PAGES_PER_STEP = 1024
# Counted in a snapshot and checked again after a restore.
COUNTED_TABLES = ("sessions", "messages", "inbox")

Progress = Callable[[int, int], None]


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite database URL, or None for PostgreSQL."""
    path = sqlite_path(url)
    return Path(path) if path else None


def snapshot_sqlite(source: Path, target: Path, progress: Progress | None = None) -> None:
    """Copy the SQLite database ``source`` into the new file ``target``, consistently.

    ``progress(copied_pages, total_pages)`` is called after each step. Raises
    ``StoreError`` with one line when ``source`` cannot be read as a SQLite database.
    """
    try:
        _copy(source, target, progress)
    except sqlite3.Error as exc:
        target.unlink(missing_ok=True)
        raise StoreError(f"cannot snapshot the SQLite database {source}: {exc}") from exc


def _copy(source: Path, target: Path, progress: Progress | None) -> None:

    def step(_status: int, remaining: int, total: int) -> None:
        if progress is not None:
            progress(total - remaining, total)

    with (
        # Not read-only: a read-only connection cannot open a WAL database whose -shm
        # file is missing (the gateway is stopped); this one only ever reads.
        closing(sqlite3.connect(source, timeout=30)) as src,
        closing(sqlite3.connect(target)) as dst,
    ):
        src.isolation_level = None
        src.execute("BEGIN")
        src.execute("SELECT count(*) FROM sqlite_master").fetchone()  # pins the snapshot
        src.backup(dst, pages=PAGES_PER_STEP, progress=step)
        src.execute("COMMIT")
        dst.execute("PRAGMA journal_mode=DELETE")


def table_counts(database: Path) -> dict[str, int]:
    """Rows in each of ``COUNTED_TABLES`` of the SQLite file ``database`` (0 if absent)."""
    with closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)) as conn:
        present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        return {
            table: conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]  # noqa: S608
            if table in present
            else 0
            for table in COUNTED_TABLES
        }


def schema_revision_of(database: Path) -> str | None:
    """The Alembic revision recorded in the SQLite file ``database``, if any."""
    with closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)) as conn:
        present = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'alembic_version'"
        ).fetchone()
        if present is None:
            return None
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        return str(row[0]) if row else None
