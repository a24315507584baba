"""Find stored user and assistant messages by text, within a privacy scope.

Ranking costs grow with the number of matches (bm25 / ts_rank score every matching
row), so the engine first counts matches up to ``RANK_LIMIT``: below it results are
ordered by relevance, above it by recency (newest first), which the index serves
without scoring. Queries with CJK text, which the word tokenizers keep as one long
token, are answered as substring queries: through the trigram index when there is one
and every term has at least 3 characters, else with ``LIKE`` (a scan).

Scopes (the caller decides which one the asking person may use):

- ``chat``: sessions of the same platform and chat_id, and thread_id when set.
- ``user``: ``chat`` plus the asking user's direct chats on the same platform
  (sessions where ``user_id`` is the user and ``chat_id == user_id``, i.e. not a group).
  User ids are not linked across platforms, so no other platform is searched: an equal
  id elsewhere may be another person. ``core.store.search.access.visible`` is the same rule
  for the other ``session_search`` modes.
- ``all``: every session.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Literal

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection

from core.record import record
from core.search.sanitize import Term, fts5_term, has_cjk, parse_query

RANK_LIMIT = 2000
MIN_TRIGRAM_CHARS = 3


@record
class SearchScope:
    """Whose conversations a search may read; see the module docstring."""

    platform: str
    chat_id: str
    thread_id: str | None
    user_id: str
    mode: Literal["chat", "user", "all"] = "chat"


@record
class Match:
    """One matching message. ``score`` is relevance (higher is better), 0.0 when the
    results are ordered by recency instead."""

    message_id: int
    session_id: str
    role: str
    created_at: float
    score: float


async def find_messages(
    conn: AsyncConnection,
    query: str,
    scope: SearchScope,
    *,
    limit: int = 50,
    exclude_session_ids: Collection[str] = (),
) -> list[Match]:
    """Matches for ``query`` in ``scope``, best first; [] when nothing is searchable."""
    terms = parse_query(query)
    if not terms or limit <= 0:
        return []
    where, params = _filters(scope, exclude_session_ids)
    params["limit"] = limit
    dialect = conn.dialect.name
    if any(has_cjk(term.text) for term in terms):
        search: _Search = await _substring_search(conn, terms, dialect)
    elif dialect == "sqlite":
        search = _fts5_search(" ".join(fts5_term(term) for term in terms))
    else:
        search = _ts_search(terms)
    params.update(search.params)
    ranked = search.rankable and await _match_count(conn, search) <= RANK_LIMIT
    sql = search.sql(where, ranked=ranked)
    result = await conn.execute(_bind(sql, exclude_session_ids), params)
    return [Match(int(r[0]), str(r[1]), str(r[2]), float(r[3]), float(r[4])) for r in result]


@record
class _Search:
    """One way of finding matching message ids: SQL fragments plus their parameters."""

    source: str  # FROM clause yielding ``m`` (messages) and optionally the index
    condition: str
    score: str
    recency: str  # ORDER BY expression that the index can serve newest-first
    params: dict[str, Any]
    rankable: bool
    count_sql: str = ""

    def sql(self, where: str, *, ranked: bool) -> str:
        score = self.score if ranked else "0.0"
        order = "score DESC" if ranked else f"{self.recency} DESC"
        return (
            f"SELECT m.id, m.session_id, m.role, m.created_at, {score} AS score "
            f"FROM {self.source} JOIN sessions s ON s.id = m.session_id "
            f"WHERE {self.condition} AND {where} ORDER BY {order} LIMIT :limit"
        )


def _fts5_search(match: str) -> _Search:
    return _Search(
        source="messages_fts JOIN messages m ON m.id = messages_fts.rowid",
        condition="messages_fts MATCH :match",
        # bm25 is lower-is-better; negate it so every score reads higher-is-better.
        score="-bm25(messages_fts)",
        recency="messages_fts.rowid",
        params={"match": match},
        rankable=True,
        count_sql="SELECT 1 FROM messages_fts WHERE messages_fts MATCH :match "
        f"LIMIT {RANK_LIMIT + 1}",
    )


def _ts_search(terms: Sequence[Term]) -> _Search:
    parts, params = [], {}
    for index, term in enumerate(terms):
        name = f"t{index}"
        if term.prefix:
            params[name] = "'" + term.text.replace("'", "''") + "':*"
            parts.append(f"to_tsquery('simple', :{name})")
        else:
            params[name] = term.text
            function = "phraseto_tsquery" if term.phrase else "plainto_tsquery"
            parts.append(f"{function}('simple', :{name})")
    tsquery = "(" + " && ".join(parts) + ")"
    return _Search(
        source="messages m",
        condition=f"m.content_tsv @@ {tsquery}",
        score=f"ts_rank(m.content_tsv, {tsquery})",
        recency="m.id",
        params=params,
        rankable=True,
        count_sql=f"SELECT 1 FROM messages m WHERE m.content_tsv @@ {tsquery} "
        f"LIMIT {RANK_LIMIT + 1}",
    )


async def _substring_search(conn: AsyncConnection, terms: Sequence[Term], dialect: str) -> _Search:
    texts = [term.text for term in terms]
    long_enough = min(map(len, texts)) >= MIN_TRIGRAM_CHARS
    if dialect == "sqlite" and long_enough and await _has_trigram_table(conn):
        match = " ".join(fts5_term(Term(text_)) for text_ in texts)
        return _Search(
            source="messages_trigram JOIN messages m ON m.id = messages_trigram.rowid",
            condition="messages_trigram MATCH :match",
            score="0.0",
            recency="messages_trigram.rowid",
            params={"match": match},
            rankable=False,
        )
    # PostgreSQL's pg_trgm index, when present, serves ILIKE by itself.
    like = "ILIKE" if dialect == "postgresql" else "LIKE"
    params = {f"t{index}": "%" + _escape_like(text_) + "%" for index, text_ in enumerate(texts)}
    condition = " AND ".join(f"m.content {like} :{name} ESCAPE '\\'" for name in params)
    return _Search("messages m", condition, "0.0", "m.id", params, rankable=False)


async def _has_trigram_table(conn: AsyncConnection) -> bool:
    found = await conn.execute(
        text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'messages_trigram'")
    )
    return found.first() is not None


async def _match_count(conn: AsyncConnection, search: _Search) -> int:
    sql = f"SELECT count(*) FROM ({search.count_sql}) AS hits"
    return int((await conn.execute(text(sql), search.params)).scalar_one())


def _filters(scope: SearchScope, exclude: Collection[str]) -> tuple[str, dict[str, Any]]:
    clauses = ["m.role IN ('user', 'assistant')"]
    params: dict[str, Any] = {}
    if scope.mode != "all":
        clauses.append(_scope_clause(scope))
        params.update(platform=scope.platform, chat_id=scope.chat_id, user_id=scope.user_id)
        params["group_key"] = "%:u=%"  # per-user sessions inside a group
        if scope.thread_id is not None:
            params["thread_id"] = scope.thread_id
    if exclude:
        clauses.append("m.session_id NOT IN :exclude")
        params["exclude"] = list(exclude)
    return " AND ".join(clauses), params


def _scope_clause(scope: SearchScope) -> str:
    chat = "s.platform = :platform AND s.chat_id = :chat_id"
    if scope.thread_id is not None:
        chat += " AND s.thread_id = :thread_id"
    if scope.mode == "chat":
        return f"({chat})"
    direct = (
        "s.user_id = :user_id AND s.session_key NOT LIKE :group_key AND "
        "s.platform = :platform AND s.chat_id = s.user_id"
    )
    return f"(({chat}) OR ({direct}))"


def _bind(sql: str, exclude: Collection[str]) -> Any:
    statement = text(sql)
    if exclude:
        statement = statement.bindparams(bindparam("exclude", expanding=True))
    return statement


def _escape_like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
