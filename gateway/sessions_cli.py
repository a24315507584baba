"""``chatgate sessions``: list, show (with the compaction lineage) and search sessions.

``search`` uses the engine behind the ``session_search`` tool. The operator at the shell
may read every chat, so without ``--chat`` it searches everything; ``--chat`` and
``--user`` narrow it to the scopes the tool offers a chat's users.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from core.record import record
from core.search.sanitize import parse_query
from core.session_tools import thaw
from core.store.db import SessionDB
from core.store.lineage_tree import LineageEntry
from core.store.records import SessionRow
from core.store.search.matches import Match, SearchScope
from gateway.cli_tables import add_id_column
from gateway.config import load_settings
from gateway.json_output import JsonFlag, emit, iso

T = TypeVar("T")

sessions_app = typer.Typer(no_args_is_help=True, help="Inspect and search sessions.")
console = Console()
err = Console(stderr=True)

SNIPPET_CHARS = 120
SNIPPET_MIN = 30
WHEN_WIDTH = len("2026-01-01 00:00:00")
ROLE_WIDTH = len("assistant")
TABLE_FRAME = 15  # borders and padding of four columns, and the snippet's two "…"
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


@record
class Hit:
    """A search match with the text of its message."""

    match: Match
    content: str


@sessions_app.command("list")
def sessions_list(
    limit: Annotated[int, typer.Option(min=1)] = 20, as_json: JsonFlag = False
) -> None:
    """The most recently active sessions."""
    rows = _with_db(lambda db: db.recent_sessions(limit))
    if as_json:
        emit([_session_json(r) for r in rows])
        return
    table = Table()
    add_id_column(table, "id", (r.id for r in rows))
    table.add_column("key", overflow="fold")
    for name in ("turns", "last active (UTC)", "ended"):
        table.add_column(name)
    for r in rows:
        table.add_row(
            r.id, r.session_key, str(r.turn_count), _ts(r.last_active_at), r.end_reason or ""
        )
    console.print(table)


def _session_json(row: SessionRow) -> dict[str, object]:
    return {
        "id": row.id,
        "key": row.session_key,
        "platform": row.platform,
        "chat_id": row.chat_id,
        "turns": row.turn_count,
        "messages": row.message_count,
        "started_at": iso(row.started_at),
        "last_active_at": iso(row.last_active_at),
        "end_reason": row.end_reason,
    }


@sessions_app.command("show")
def sessions_show(
    session_id: str,
    lineage: Annotated[
        bool, typer.Option("--lineage", help="also show ancestors (root first) and children")
    ] = False,
) -> None:
    """One session: its counters, prompt tier sizes, frozen tools and stored system prompt."""
    row, chain = _with_db(lambda db: _session_and_lineage(db, session_id, with_lineage=lineage))
    if row is None:
        err.print(f"no session {session_id}", markup=False)
        raise typer.Exit(1)
    for name in SHOW_FIELDS:
        console.print(f"{name}: {getattr(row, name)}", markup=False)
    console.print(f"started_at: {_ts(row.started_at)}")
    console.print(f"prompt tiers (bytes): {row.prompt_tiers}")
    frozen = thaw(row.tool_specs) if row.tool_specs is not None else None
    tools = ", ".join(s.name for s in frozen) if frozen is not None else "(not frozen yet)"
    console.print(f"tools: {tools or '(none)'}", markup=False)
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
        err.print("--chat must look like PLATFORM:CHAT_ID, e.g. webhook:support-42", markup=False)
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
    return row, await db.lineage(session_id)


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
