"""``notes``: a local, no-network recall store of past exchanges.

Every completed exchange is written to ``$CHATGATE_HOME/memory_provider/notes.sqlite3``.
Before a turn, exchanges from the same person's OTHER sessions that share significant words
with the message are recalled (the running session is already in the transcript). Recalled
text is threat-scanned like memory entries; a snippet that matches is dropped, not shown.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from core.clock import Clock, SystemClock
from core.errors import ConfigError
from core.memory.providers.notes_store import Exchange, NotesStore
from core.memory.threats import scan
from core.models.base import ToolSpec
from core.record import record

Scope = Literal["user", "all"]
_SNIPPET_CHARS = 280
_SEARCH_LIMIT = 10

PROMPT_BLOCK = (
    "Notes recall is on: when earlier sessions hold exchanges related to the user's message, "
    "they are attached after it in a <memory-context> block. Use them as background; call "
    "`notes_search` to look further back."
)
SEARCH_SPEC = ToolSpec(
    name="notes_search",
    description=(
        "Search exchanges from this person's earlier sessions (not this one) by keywords. "
        "Returns the best matches, newest wording first within equal relevance."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Keywords to look for."},
            "limit": {"type": "integer", "minimum": 1, "maximum": _SEARCH_LIMIT},
        },
        "required": ["query"],
    },
)


@record
class NotesOptions:
    """``memory.provider_options`` for ``notes``."""

    max_results: int = 3
    max_chars: int = 1500
    # "user": recall only the same person's exchanges; "all": everyone's on this home.
    scope: Scope = "user"

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> NotesOptions:
        unknown = sorted(set(options) - {"max_results", "max_chars", "scope"})
        if unknown:
            raise ConfigError(f"memory.provider_options.{unknown[0]}", "unknown notes option")
        scope = options.get("scope", "user")
        if scope not in ("user", "all"):
            raise ConfigError("memory.provider_options.scope", "must be 'user' or 'all'")
        return cls(
            max_results=_bounded_int(options, "max_results", 3, 1, 20),
            max_chars=_bounded_int(options, "max_chars", 1500, 200, 20_000),
            scope=scope,
        )


def _bounded_int(options: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"memory.provider_options.{key}", f"must be a whole number {low}-{high}")
    return value


class NotesProvider:
    """See the module docstring. Satisfies ``core.memory.provider.MemoryProvider``."""

    def __init__(
        self,
        home: Path,
        options: NotesOptions | None = None,
        *,
        clock: Clock | None = None,
        full_text: bool = True,
    ) -> None:
        self.options = options or NotesOptions()
        self.store = NotesStore(home / "memory_provider" / "notes.sqlite3", full_text=full_text)
        self._clock = clock or SystemClock()
        self._owners: dict[str, str] = {}

    @classmethod
    def from_options(cls, options: Mapping[str, Any], home: Path) -> NotesProvider:
        return cls(home, NotesOptions.parse(options))

    @property
    def name(self) -> str:
        return "notes"

    def is_available(self) -> bool:
        return True  # stdlib only

    async def initialize(self, session_id: str, *, platform: str, user_id: str) -> None:
        self._owners[session_id] = f"{platform}:{user_id}"
        await asyncio.to_thread(self.store.open)

    def system_prompt_block(self) -> str:
        return PROMPT_BLOCK

    async def prefetch(self, query: str, *, session_id: str) -> str:
        found = await self._search(query, session_id, self.options.max_results)
        return format_recall(found, self.options.max_chars)

    async def sync_turn(self, user_text: str, assistant_text: str, *, session_id: str) -> None:
        await self._file(user_text, assistant_text, session_id, self._owners.get(session_id, ""))

    async def sync_authored_turn(
        self, user_text: str, assistant_text: str, *, session_id: str, platform: str, user_id: str
    ) -> None:
        """File the exchange under the person who wrote it, not the session's opener: in a
        shared group session each person's words are theirs (recall, forgetting)."""
        await self._file(user_text, assistant_text, session_id, f"{platform}:{user_id}")

    async def _file(self, user_text: str, assistant_text: str, session_id: str, owner: str) -> None:
        if not (user_text.strip() or assistant_text.strip()):
            return
        exchange = Exchange(session_id, self._clock.now(), user_text, assistant_text)
        await asyncio.to_thread(self.store.add, exchange, owner=owner)

    async def on_session_end(self, session_id: str) -> None:
        # Every exchange is written as it happens; only the owner mapping is left to drop.
        self._owners.pop(session_id, None)

    def get_tool_schemas(self) -> list[ToolSpec]:
        return [SEARCH_SPEC]

    async def handle_tool_call(self, name: str, args: dict[str, Any], *, session_id: str) -> str:
        if name != SEARCH_SPEC.name:
            return _error(f"notes has no tool {name!r}")
        query, limit = args.get("query"), args.get("limit", _SEARCH_LIMIT)
        if not isinstance(query, str) or not query.strip():
            return _error("'query' must be a non-empty string")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            return _error(f"'limit' must be a whole number 1-{_SEARCH_LIMIT}")
        found = await self._search(query, session_id, min(limit, _SEARCH_LIMIT))
        results = [_as_json(x) for x in found]
        return json.dumps({"success": True, "results": results}, ensure_ascii=False)

    async def _search(self, query: str, session_id: str, limit: int) -> list[Exchange]:
        """Up to ``limit`` matches that pass the threat scan, outside ``session_id``."""
        owner = self._owners.get(session_id, "") if self.options.scope == "user" else None
        if owner == "":
            return []  # an unknown session's person is unknown: recall nothing rather than leak
        # Ask for spares so dropped snippets do not leave the answer short.
        found = await asyncio.to_thread(
            self.store.search, query, owner=owner, exclude_session=session_id, limit=limit * 3
        )
        safe = [x for x in found if scan(f"{x.user_text}\n{x.assistant_text}") is None]
        return safe[:limit]


def format_recall(found: list[Exchange], max_chars: int) -> str:
    """Compact lines for a ``<memory-context>`` block, at most ``max_chars`` long ("" if none)."""
    text = ""
    for exchange in found:
        line = _line(exchange)
        candidate = f"{text}\n{line}" if text else f"Earlier exchanges:\n{line}"
        if len(candidate) > max_chars:
            return text or _clip(candidate, max_chars)
        text = candidate
    return text


def _line(exchange: Exchange) -> str:
    day = datetime.fromtimestamp(exchange.created_at, tz=UTC).date().isoformat()
    user = _clip(exchange.user_text, _SNIPPET_CHARS)
    assistant = _clip(exchange.assistant_text, _SNIPPET_CHARS)
    return f"- {day} user: {user} | assistant: {assistant}"


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _as_json(exchange: Exchange) -> dict[str, str]:
    day = datetime.fromtimestamp(exchange.created_at, tz=UTC).date().isoformat()
    return {"date": day, "user": exchange.user_text, "assistant": exchange.assistant_text}


def _error(message: str) -> str:
    return json.dumps({"success": False, "error": message})
