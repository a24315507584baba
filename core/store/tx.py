"""The one interface write operations see: a transaction that runs portable SQL.

Write operations are plain functions of a ``Tx`` that run inside a transaction the
writer opened. The SQL is written once with ``:name`` parameters and runs unchanged
on SQLite (the stdlib driver, in the writer's own thread) and PostgreSQL (through
SQLAlchemy's connection, inside ``run_sync``). JSON columns are passed as JSON text.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any, Protocol, TypeVar

from sqlalchemy import TextClause, text
from sqlalchemy.engine import Connection

Params = Mapping[str, Any]
T = TypeVar("T")


def _null(value: None) -> None:
    return value


# The stdlib driver binds int, float and str as they are, but sends every other value,
# None (SQL NULL) included, through its adapter lookup, which on a miss formats and drops
# an AttributeError. A turn binds some sixty NULLs; with an adapter registered for None
# the lookup hits at once and binds the same NULL (an insert of five: 4.5 -> 1.9 us).
# Registered at import, for every sqlite3 connection of the process.
sqlite3.register_adapter(type(None), _null)


class Tx(Protocol):
    """A transaction in progress."""

    def execute(self, sql: str, params: Params) -> None: ...

    def executemany(self, sql: str, rows: Sequence[Params]) -> None: ...

    def scalar(self, sql: str, params: Params) -> Any:
        """The first column of the first row, or None when there is no row."""
        ...

    def fetch(self, sql: str, params: Params) -> list[dict[str, Any]]:
        """Every row as a dict of column name to value."""
        ...

    def messages_added(self, count: int) -> None:
        """This transaction stores ``count`` messages: on SQLite the writer indexes them
        for search once it commits (``core.store.search.queue``)."""
        ...


class SqliteTx:
    """``Tx`` over a stdlib ``sqlite3`` connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.added_messages = 0

    def execute(self, sql: str, params: Params) -> None:
        self._conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Params]) -> None:
        shape = _multi_row(sql) if len(rows) > 1 else None
        if shape is None:
            self._conn.executemany(sql, rows)
            return
        head, names = shape
        # An older SQLite takes 999 parameters a statement, a newer one 32,766 or more.
        most = self._conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // len(names)
        for chunk in greedy_chunks(rows, [s for s in _CHUNKS if s <= most or s == 1]):
            values = [row[name] for row in chunk for name in names]
            self._conn.execute(_rows_sql(head, len(names), len(chunk)), values)

    def scalar(self, sql: str, params: Params) -> Any:
        row = self._conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def fetch(self, sql: str, params: Params) -> list[dict[str, Any]]:
        cursor = self._conn.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def messages_added(self, count: int) -> None:
        self.added_messages += count


def greedy_chunks(items: Sequence[T], sizes: Sequence[int]) -> Iterator[Sequence[T]]:
    """``items`` in order, cut into pieces of the largest of ``sizes`` (descending, the
    last 1) that still fits: a statement per piece has only a few spellings."""
    done = 0
    for size in sizes:
        while len(items) - done >= size:
            yield items[done : done + size]
            done += size


# Rows a multi-row INSERT takes at once: a batch of N rows is cut greedily into these,
# so each INSERT has at most a few spellings in the connection's statement cache.
_CHUNKS = (128, 16, 4, 1)


@lru_cache(maxsize=256)
def _multi_row(sql: str) -> tuple[str, tuple[str, ...]] | None:
    """(``INSERT INTO t (a, b) VALUES``, its parameter names) of a plain single-row
    ``insert_sql`` statement; None for anything else (a suffix, an UPDATE)."""
    head, sep, marks = sql.partition(" VALUES (")
    if not sep or not head.startswith("INSERT INTO ") or not marks.endswith(")"):
        return None
    names = tuple(m.strip() for m in marks[:-1].split(","))
    if not all(n.startswith(":") and n[1:].isidentifier() for n in names):
        return None
    return head + " VALUES ", tuple(n[1:] for n in names)


@lru_cache(maxsize=256)
def _rows_sql(head: str, width: int, rows: int) -> str:
    one = "(" + ", ".join("?" * width) + ")"
    return head + ", ".join([one] * rows)


@lru_cache(maxsize=256)
def _clause(sql: str) -> TextClause:
    return text(sql)


class SqlAlchemyTx:
    """``Tx`` over a SQLAlchemy connection (used for PostgreSQL)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Params) -> None:
        self._conn.execute(_clause(sql), dict(params))

    def executemany(self, sql: str, rows: Sequence[Params]) -> None:
        self._conn.execute(_clause(sql), [dict(r) for r in rows])

    def scalar(self, sql: str, params: Params) -> Any:
        return self._conn.execute(_clause(sql), dict(params)).scalar()

    def fetch(self, sql: str, params: Params) -> list[dict[str, Any]]:
        return [dict(r._mapping) for r in self._conn.execute(_clause(sql), dict(params))]

    def messages_added(self, count: int) -> None:
        return None  # PostgreSQL indexes a message in its own row (``content_tsv``)


def insert_sql(table: str, columns: Sequence[str], suffix: str = "") -> str:
    """``INSERT INTO table (a, b) VALUES (:a, :b)`` plus ``suffix``."""
    names = ", ".join(columns)
    marks = ", ".join(f":{c}" for c in columns)
    return f"INSERT INTO {table} ({names}) VALUES ({marks}){suffix}"
