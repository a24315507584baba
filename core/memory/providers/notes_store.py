"""The notes provider's SQLite file: past exchanges and a full-text index over them.

Blocking by design (stdlib ``sqlite3``); the provider calls it through ``asyncio.to_thread``.
Each call opens its own connection, so calls from different threads never share one.
FTS5 ranks matches when SQLite has it; otherwise a LIKE scan ranks by matched terms.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from core.record import record

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS exchanges (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    created_at REAL NOT NULL,
    user_text TEXT NOT NULL,
    assistant_text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS exchanges_by_owner ON exchanges (owner, created_at);
"""
# External content: the text lives once, in ``exchanges``; a trigger keeps the index current.
_FTS_SCHEMA = """
CREATE VIRTUAL TABLE exchanges_fts USING fts5(
    user_text, assistant_text, content='exchanges', content_rowid='id'
);
CREATE TRIGGER IF NOT EXISTS exchanges_indexed AFTER INSERT ON exchanges BEGIN
    INSERT INTO exchanges_fts (rowid, user_text, assistant_text)
    VALUES (new.id, new.user_text, new.assistant_text);
END;
INSERT INTO exchanges_fts (exchanges_fts) VALUES ('rebuild');
"""
_COLUMNS = "e.session_id, e.created_at, e.user_text, e.assistant_text"
_LIKE_CANDIDATES = 200

_WORD = re.compile(r"[^\W_]+")
_STOPWORD_TEXT = (
    "the and for are but not you your with this that from have has had was were what when "
    "where which who why how can could would should will about into onto than then them "
    "they there their our out its all any some just also very more most much many did does "
    "doing done get got let like make made want need please tell know think yes okay"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@record
class Exchange:
    """One stored user/assistant exchange."""

    session_id: str
    created_at: float
    user_text: str
    assistant_text: str


def significant_terms(query: str, *, limit: int = 8) -> list[str]:
    """The words of ``query`` worth searching for: no stopwords, no short ASCII words."""
    terms: list[str] = []
    for word in _WORD.findall(query.casefold()):
        short = len(word) < 3 and word.isascii()
        if not short and word not in _STOPWORDS and word not in terms:
            terms.append(word)
    return terms[:limit]


def fts_query(terms: list[str]) -> str:
    """An FTS5 MATCH expression that is only quoted strings, so it can never be a syntax error."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class NotesStore:
    """Past exchanges in one SQLite file."""

    def __init__(self, path: Path, *, full_text: bool = True) -> None:
        self.path = path
        self._want_fts = full_text
        self.full_text = False
        self._ready = False
        self._lock = threading.Lock()

    def add(self, exchange: Exchange, *, owner: str) -> None:
        """Store one exchange for ``owner`` (``platform:user_id``)."""
        with self._connect() as conn, conn:
            conn.execute(
                "INSERT INTO exchanges (session_id, owner, created_at, user_text, assistant_text)"
                " VALUES (?, ?, ?, ?, ?)",
                (
                    exchange.session_id,
                    owner,
                    exchange.created_at,
                    exchange.user_text,
                    exchange.assistant_text,
                ),
            )

    def exchanges_of(self, owner: str) -> list[dict[str, object]]:
        """Every exchange filed under ``owner``, oldest first (``people show``/``export``)."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT session_id, created_at, user_text, assistant_text FROM exchanges"
                " WHERE owner = ? ORDER BY created_at, id",
                (owner,),
            ).fetchall()
        names = ("session_id", "created_at", "user_text", "assistant_text")
        return [dict(zip(names, row, strict=True)) for row in rows]

    def forget(self, owner: str) -> int:
        """Delete every exchange filed under ``owner``, from the index and from the bytes
        (``secure_delete``, an index optimize, a WAL checkpoint); how many went."""
        with self._connect() as conn:
            conn.execute("PRAGMA secure_delete = ON")
            with conn:
                if self.full_text:  # external content: the index is told what it held
                    conn.execute(
                        "INSERT INTO exchanges_fts"
                        " (exchanges_fts, rowid, user_text, assistant_text)"
                        " SELECT 'delete', id, user_text, assistant_text FROM exchanges"
                        " WHERE owner = ?",
                        (owner,),
                    )
                gone = conn.execute("DELETE FROM exchanges WHERE owner = ?", (owner,)).rowcount
                if self.full_text:
                    conn.execute("INSERT INTO exchanges_fts (exchanges_fts) VALUES ('optimize')")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return gone

    def search(
        self, query: str, *, owner: str | None, exclude_session: str, limit: int
    ) -> list[Exchange]:
        """Best matches for ``query``'s significant words, outside ``exclude_session``.

        ``owner`` None searches everyone's exchanges.
        """
        terms = significant_terms(query)
        if not terms:
            return []
        with self._connect() as conn:
            if self.full_text:
                return _fts_search(conn, terms, owner, exclude_session, limit)
            return _like_search(conn, terms, owner, exclude_session, limit)

    def open(self) -> None:
        """Create the file and its tables if needed; every other call does this too."""
        self._prepare()

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self._prepare()
        conn = sqlite3.connect(self.path, timeout=10)
        try:
            yield conn
        finally:
            conn.close()

    def _prepare(self) -> None:
        with self._lock:
            if self._ready:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=10)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(_SCHEMA)
                self.full_text = self._want_fts and _ensure_fts(conn)
            finally:
                conn.close()
            self._ready = True


def _ensure_fts(conn: sqlite3.Connection) -> bool:
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'exchanges_fts'"
    ).fetchone()
    if found:
        return True
    try:
        conn.executescript(f"BEGIN;{_FTS_SCHEMA}COMMIT;")
    except sqlite3.OperationalError as exc:  # SQLite built without FTS5
        conn.rollback()
        log.info("notes: full-text search unavailable (%s); matching with LIKE", exc)
        return False
    return True


def _scope(owner: str | None) -> tuple[str, tuple[str, ...]]:
    return ("AND e.owner = ?", (owner,)) if owner is not None else ("", ())


def _fts_search(
    conn: sqlite3.Connection, terms: list[str], owner: str | None, exclude: str, limit: int
) -> list[Exchange]:
    scope, scope_args = _scope(owner)
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM exchanges_fts JOIN exchanges AS e ON e.id = exchanges_fts.rowid"
        f" WHERE exchanges_fts MATCH ? AND e.session_id != ? {scope}"
        " ORDER BY exchanges_fts.rank, e.created_at DESC LIMIT ?",
        (fts_query(terms), exclude, *scope_args, limit),
    ).fetchall()
    return [Exchange(*row) for row in rows]


def _like_search(
    conn: sqlite3.Connection, terms: list[str], owner: str | None, exclude: str, limit: int
) -> list[Exchange]:
    scope, scope_args = _scope(owner)
    patterns = ["%" + re.sub(r"([\\%_])", r"\\\1", t) + "%" for t in terms]
    matches = " OR ".join(
        "e.user_text LIKE ? ESCAPE '\\' OR e.assistant_text LIKE ? ESCAPE '\\'" for _ in terms
    )
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM exchanges AS e WHERE e.session_id != ? {scope}"
        f" AND ({matches}) ORDER BY e.created_at DESC LIMIT ?",
        (exclude, *scope_args, *(p for p in patterns for _ in (0, 1)), _LIKE_CANDIDATES),
    ).fetchall()
    found = [Exchange(*row) for row in rows]
    # Most matched terms first; the sort is stable, so ties stay newest first.
    found.sort(key=lambda x: -_matched(x, terms))
    return found[:limit]


def _matched(exchange: Exchange, terms: list[str]) -> int:
    text = f"{exchange.user_text}\n{exchange.assistant_text}".casefold()
    return sum(term in text for term in terms)
