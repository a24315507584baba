"""``chatgate sessions``: list, show (with the compaction lineage) and search sessions.

``search`` uses the engine behind the ``session_search`` tool. The operator at the shell
may read every chat, so without ``--chat`` it searches everything; ``--chat`` and
``--user`` narrow it to the scopes the tool offers a chat's users.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from core.search.sanitize import parse_query
from core.store.db import SessionDB
from core.store.records import SessionRow
from core.store.schema import messages, sessions
from core.store.search.matches import Match, SearchScope
from gateway.config import load_settings

T = TypeVar("T")

sessions_app = typer.Typer(no_args_is_help=True, help="Inspect and search sessions.")
console = Console()
err = Console(stderr=True)

SNIPPET_CHARS = 120
SNIPPET_MIN = 30
WHEN_WIDTH = len("2026-01-01 00:00:00")
ROLE_WIDTH = len("assistant")
TABLE_FRAME = 15  # borders and padding of four columns, and the snippet's two "…"
# A lineage is a chain of compactions; a cycle or runaway chain must not hang the CLI.
MAX_LINEAGE = 1_000
SHOW_FIELDS = (
    "id",
    "session_key",
    "platform",
    "chat_id",
    "model",
    "provider",
    "turn_count",
    "message_count",
    "tool_call_count",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "end_reason",
    "parent_session_id",
)


@dataclass(frozen=True, slots=True)
class LineageEntry:
    """One session of a lineage; ``depth`` 0 is the root."""

    id: str
    depth: int
    started_at: float
    ended_at: float | None
    end_reason: str | None
    messages: int


@dataclass(frozen=True, slots=True)
class Hit:
    """A search match with the text of its message."""

    match: Match
    content: str


@sessions_app.command("list")
def sessions_list(limit: Annotated[int, typer.Option(min=1)] = 20) -> None:
    """The most recently active sessions."""
    rows = _with_db(lambda db: db.recent_sessions(limit))
    table = Table("id", "key", "turns", "last active (UTC)", "ended")
    for r in rows:
        table.add_row(
            r.id, r.session_key, str(r.turn_count), _ts(r.last_active_at), r.end_reason or ""
        )
    console.print(table)


@sessions_app.command("show")
def sessions_show(
    session_id: str,
    lineage: Annotated[
        bool, typer.Option("--lineage", help="also show ancestors (root first) and children")
    ] = False,
) -> None:
    """One session: its counters, prompt tier sizes and stored system prompt."""
    row, chain = _with_db(lambda db: _session_and_lineage(db, session_id, with_lineage=lineage))
    if row is None:
        err.print(f"no session {session_id}", markup=False)
        raise typer.Exit(1)
    for name in SHOW_FIELDS:
        console.print(f"{name}: {getattr(row, name)}", markup=False)
    console.print(f"started_at: {_ts(row.started_at)}")
    console.print(f"prompt tiers (bytes): {row.prompt_tiers}")
    if lineage:
        console.print(_lineage_table(chain, session_id))
    console.print("system prompt:", style="bold")
    console.print(row.system_prompt, markup=False, highlight=False)


@sessions_app.command("search")
def sessions_search(
    query: str,
    chat: Annotated[
        str,
        typer.Option(metavar="PLATFORM:CHAT_ID", help="only sessions of this chat"),
    ] = "",
    user: Annotated[
        str,
        typer.Option(metavar="USER_ID", help="with --chat: add this user's direct chats"),
    ] = "",
    limit: Annotated[int, typer.Option(min=1, max=100)] = 20,
) -> None:
    """Find stored user and assistant messages, best match first."""
    scope = _scope(chat, user)
    hits = _with_db(lambda db: _search(db, query, scope, limit))
    if not hits:
        where = "" if scope.mode == "all" else f" in {scope.platform}:{scope.chat_id}"
        console.print(f"no messages match {query!r}{where}", markup=False, highlight=False)
        return
    console.print(_hits_table(hits, [term.text for term in parse_query(query)]))


# -- search ---------------------------------------------------------------------------


def _scope(chat: str, user: str) -> SearchScope:
    if not chat:
        if user:
            err.print("--user needs --chat PLATFORM:CHAT_ID (user ids are per platform)")
            raise typer.Exit(2)
        return SearchScope(platform="", chat_id="", thread_id=None, user_id="", mode="all")
    platform, _, chat_id = chat.partition(":")
    if not (platform and chat_id):
        err.print("--chat must look like PLATFORM:CHAT_ID, e.g. telegram:12345", markup=False)
        raise typer.Exit(2)
    return SearchScope(
        platform, chat_id, thread_id=None, user_id=user, mode="user" if user else "chat"
    )


async def _search(db: SessionDB, query: str, scope: SearchScope, limit: int) -> list[Hit]:
    async with db.search.reading() as reader:
        found = await reader.find_messages(query, scope, limit=limit)
        if not found:
            return []
        contents = await reader.message_contents([m.message_id for m in found])
    return [Hit(m, contents.get(m.message_id, "")) for m in found]


def _hits_table(hits: Sequence[Hit], terms: Sequence[str]) -> Table:
    # The id, time and role are what an operator copies next: never squeeze them.
    table = Table()
    id_width = max(len(hit.match.session_id) for hit in hits)
    table.add_column("session", no_wrap=True, min_width=id_width)
    table.add_column("when (UTC)", no_wrap=True, min_width=WHEN_WIDTH)
    table.add_column("role", no_wrap=True, min_width=ROLE_WIDTH)
    table.add_column("message", no_wrap=True, overflow="ellipsis")
    # Cut the snippet to the room left on the terminal, so it stays one line.
    room = console.width - id_width - WHEN_WIDTH - ROLE_WIDTH
    width = max(SNIPPET_MIN, min(SNIPPET_CHARS, room - TABLE_FRAME))
    for hit in hits:
        line = Text(snippet(hit.content, terms, width))
        line.highlight_words(terms, style="bold", case_sensitive=False)
        table.add_row(hit.match.session_id, _ts(hit.match.created_at), hit.match.role, line)
    return table


def snippet(content: str, terms: Sequence[str], width: int = SNIPPET_CHARS) -> str:
    """One line of ``content`` around the first occurrence of any of ``terms``."""
    flat = " ".join(content.split())
    pattern = "|".join(re.escape(" ".join(t.split())) for t in terms if t.strip())
    found = re.search(pattern, flat, re.IGNORECASE) if pattern else None
    # Start a third of the width before the match so the reader sees what led up to it.
    start = max(0, min((found.start() if found else 0) - width // 3, len(flat) - width))
    end = start + width
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


# -- lineage ---------------------------------------------------------------------------


async def _session_and_lineage(
    db: SessionDB, session_id: str, *, with_lineage: bool
) -> tuple[SessionRow | None, list[LineageEntry]]:
    row = await db.session(session_id)
    if row is None or not with_lineage:
        return row, []
    async with db.engines.read.connect() as conn:
        return row, await lineage_of(conn, session_id)


async def lineage_of(conn: AsyncConnection, session_id: str) -> list[LineageEntry]:
    """Ancestors from the root down to ``session_id``, then its descendants depth-first."""
    ancestors = await _ancestors(conn, session_id)
    below = await _descendants(conn, session_id, set(ancestors))
    placed = [(sid, depth) for depth, sid in enumerate(ancestors)]
    placed += [(sid, len(ancestors) + depth) for sid, depth in below]
    details = await _details(conn, [sid for sid, _ in placed])
    return [LineageEntry(sid, depth, *details[sid]) for sid, depth in placed if sid in details]


async def _ancestors(conn: AsyncConnection, session_id: str) -> list[str]:
    chain = [session_id]
    while len(chain) < MAX_LINEAGE:
        stmt = select(sessions.c.parent_session_id).where(sessions.c.id == chain[-1])
        parent = (await conn.execute(stmt)).scalar_one_or_none()
        if parent is None or parent in chain:
            break
        chain.append(parent)
    return chain[::-1]


async def _descendants(
    conn: AsyncConnection, session_id: str, seen: set[str]
) -> list[tuple[str, int]]:
    """Children of ``session_id`` and theirs, depth-first, each with its depth below it."""
    found: list[tuple[str, int]] = []
    stack = [(child, 0) for child in reversed(await _children(conn, session_id))]
    while stack and len(found) < MAX_LINEAGE:
        sid, depth = stack.pop()
        if sid in seen:
            continue
        seen.add(sid)
        found.append((sid, depth))
        stack.extend((child, depth + 1) for child in reversed(await _children(conn, sid)))
    return found


async def _children(conn: AsyncConnection, session_id: str) -> list[str]:
    stmt = (
        select(sessions.c.id)
        .where(sessions.c.parent_session_id == session_id)
        .order_by(sessions.c.started_at, sessions.c.id)
    )
    return list((await conn.execute(stmt)).scalars())


async def _details(
    conn: AsyncConnection, ids: Sequence[str]
) -> dict[str, tuple[float, float | None, str | None, int]]:
    # Count stored rows rather than trust the counter column: this is what search reaches.
    counts = (
        select(messages.c.session_id, func.count().label("n"))
        .where(messages.c.session_id.in_(ids))
        .group_by(messages.c.session_id)
        .subquery()
    )
    stmt = (
        select(
            sessions.c.id,
            sessions.c.started_at,
            sessions.c.ended_at,
            sessions.c.end_reason,
            func.coalesce(counts.c.n, 0),
        )
        .outerjoin(counts, counts.c.session_id == sessions.c.id)
        .where(sessions.c.id.in_(ids))
    )
    rows = await conn.execute(stmt)
    return {r[0]: (float(r[1]), r[2], r[3], int(r[4])) for r in rows}


def _lineage_table(chain: Sequence[LineageEntry], shown: str) -> Table:
    table = Table(
        "session", "started (UTC)", "ended (UTC)", "end_reason", "messages", title="lineage"
    )
    table.columns[0].no_wrap = True
    for entry in chain:
        label = "  " * entry.depth + entry.id + (" (shown)" if entry.id == shown else "")
        ended = _ts(entry.ended_at) if entry.ended_at is not None else ""
        table.add_row(
            Text(label), _ts(entry.started_at), ended, entry.end_reason or "", str(entry.messages)
        )
    return table


# -- shared ----------------------------------------------------------------------------


def _with_db(fn: Callable[[SessionDB], Awaitable[T]]) -> T:
    from gateway.runtime import migrate

    settings = load_settings()

    async def go() -> T:
        await migrate(settings)
        async with SessionDB(settings.database_url) as db:
            return await fn(db)

    return asyncio.run(go())


def _ts(value: float) -> str:
    return datetime.fromtimestamp(value, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
