"""The `session_search` tool: find, scroll, read and list past conversations.

It returns stored messages, never a summary, and calls no model. Every mode is limited to
the caller's reach (see ``core.store.search.access``); a session outside it is reported exactly
like a missing one, so the tool never reveals that another person's conversation exists.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from core.errors import ToolArgumentError
from core.models.base import ToolSpec
from core.search import catalog, windows
from core.search.arguments import BROWSE_DEFAULT_LIMIT, DETAILS, SearchArgs, parse
from core.search.discovery import discover
from core.store.search.access import SCOPE_MODES, Reach
from core.store.search.reader import SearchReader, SearchStore
from core.tools import ToolContext

SESSION_SEARCH_SPEC = ToolSpec(
    name="session_search",
    description=(
        "Search and read past conversations (stored messages, not summaries). The mode "
        "follows the arguments. query: find matching messages; returns up to `limit` hits, "
        "one per conversation lineage, each with its session id, title, dates and "
        "match_message_id. With detail='adaptive' the top hit carries a window of `window` "
        "messages either side of the match (the match has anchor=true) plus the session's "
        "first and last messages; other hits show only the matching message. "
        "detail='full' gives every hit a window. session_id + around_message_id: scroll "
        "to a window around that message. session_id alone: read the session (first 20 and "
        "last 10 messages when longer than 30). No arguments: list recent sessions. scope: "
        "'chat' (this chat or thread, default), 'user' (also your direct chats on every "
        "platform), 'all' (every conversation; only where the owner allowed it). Long "
        "messages are cut (4,000 chars in windows, 1,200 in bookends) and marked truncated."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": 'Words or a "quoted phrase".'},
            "session_id": {"type": "string"},
            "around_message_id": {"type": "integer", "minimum": 1},
            "window": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 10,
                "description": "Hits for query (default 3); sessions to list (default 10).",
            },
            "detail": {"type": "string", "enum": list(DETAILS), "default": "adaptive"},
            "scope": {"type": "string", "enum": list(SCOPE_MODES), "default": "chat"},
        },
    },
)

DISCOVERY_DEFAULT_LIMIT = 3


class SessionSearchTool:
    """``session_search`` over the SessionDB's search repository."""

    spec = SESSION_SEARCH_SPEC

    def __init__(
        self, search: SearchStore, *, allow_global: bool, owners: Collection[str] = ()
    ) -> None:
        self._search = search
        self._allow_global = allow_global
        # "platform:user_id" of the people who own this deployment: they may search all.
        self._owners = frozenset(owners)

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            parsed = parse(args)
        except ToolArgumentError as exc:
            return _error(str(exc))
        owner = f"{ctx.platform}:{ctx.user_id}" in self._owners
        if parsed.scope == "all" and not (self._allow_global or owner):
            return _error("scope='all' is not enabled here; use scope 'chat' or 'user'.")
        async with self._search.reading() as reader:
            payload = await _run(reader, parsed, ctx)
        return json.dumps(payload, ensure_ascii=False)


async def _run(reader: SearchReader, args: SearchArgs, ctx: ToolContext) -> dict[str, Any]:
    exists, thread_id = await reader.thread_of(ctx.session_id)
    if not exists:
        # Without the caller's session we cannot tell its thread, so we cannot scope safely.
        return {"success": False, "error": "The current session is not stored yet; try later."}
    reach = Reach(ctx.platform, ctx.chat_id, thread_id, ctx.user_id, args.scope)
    if args.query is not None:
        return await _discover(reader, args, args.query, reach, ctx.session_id)
    if args.session_id is None:
        limit = args.limit or BROWSE_DEFAULT_LIMIT
        recent = await reader.recent_sessions(reach, limit)
        listed = [catalog.summary(entry, ctx.session_id) for entry in recent]
        return {"success": True, "mode": "browse", "scope": args.scope, "sessions": listed}
    card = await reader.session(args.session_id, reach)
    if card is None:
        return _not_found(args.session_id, args.scope)
    if args.around_message_id is None:
        body = await windows.whole(reader, card.id)
        return {"success": True, "mode": "read", **catalog.describe(card), **body}
    return await _scroll(reader, args, card.id, args.around_message_id, catalog.describe(card))


async def _scroll(
    reader: SearchReader, args: SearchArgs, session_id: str, around: int, about: dict[str, Any]
) -> dict[str, Any]:
    if not await reader.has_message(session_id, around):
        return {
            "success": False,
            "error": f"Message {around} is not in session {session_id}; read the session "
            "without around_message_id to see its message ids.",
        }
    shown = await windows.window(reader, session_id, around, args.window)
    return {"success": True, "mode": "scroll", **about, "window": shown}


async def _discover(
    reader: SearchReader, args: SearchArgs, query: str, reach: Reach, current_id: str
) -> dict[str, Any]:
    hits = await discover(
        reader,
        query,
        reach,
        current_id=current_id,
        limit=args.limit or DISCOVERY_DEFAULT_LIMIT,
        window=args.window,
        detail=args.detail,
    )
    payload: dict[str, Any] = {"success": True, "mode": "discovery", "query": query}
    payload["scope"] = args.scope
    payload["results"] = hits
    if not hits:
        payload["note"] = "No matches outside the current session; try other words or scope."
    return payload


def _not_found(session_id: str, scope: str) -> dict[str, Any]:
    return {
        "success": False,
        "error": f"No session {session_id!r} in scope {scope!r}. Call session_search with no "
        "arguments to list the sessions you can read.",
    }


def _error(message: str) -> str:
    return json.dumps({"success": False, "error": message}, ensure_ascii=False)
