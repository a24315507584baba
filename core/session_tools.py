"""A session's tools: chosen once when it opens, then sent byte for byte every turn.

Like the system prompt, the tool list is part of the prefix a provider caches, so it is
frozen on the session row (``sessions.tool_specs``: names, descriptions and JSON
schemas, in order, as JSON) when the session opens: the registry's tools that the chat's
``ToolPolicy`` allows. A tool registered later (an MCP server that connected, a policy
edit) is offered from the next session on (``/new``); ``/status`` says when the two
differ. A frozen tool that has since gone away, or that the policy now denies, stays in
the list and answers a clear error when called (``ToolOffer.refusal``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from functools import lru_cache

from core.models.base import ToolSpec
from core.record import record
from core.store.records import SessionRow
from core.tool_policy import ToolPlace, ToolPolicy
from core.tools import ToolRegistry

# Every turn reads its session's frozen list; most sessions share one of a few lists,
# so each distinct list is decoded once (~6 % of a turn's CPU on the event loop).
THAWED = 64


class _LastFrozen:
    """The last list ``freeze`` encoded, with its JSON, as one pair (threads may open
    sessions at once). The registry hands out the same spec objects until a tool comes
    or goes, and a spec is never changed in place (``thaw``), so a session opened with
    the same objects gets the same text without every schema being encoded again."""

    pair: tuple[tuple[ToolSpec, ...], str] = ((), "[]")


def freeze(specs: Sequence[ToolSpec]) -> str:
    """``specs`` as the JSON a session row keeps."""
    held, text = _LastFrozen.pair
    if len(held) == len(specs) and all(a is b for a, b in zip(held, specs, strict=True)):
        return text
    text = json.dumps(
        [{"name": s.name, "description": s.description, "parameters": s.parameters} for s in specs],
        ensure_ascii=False,
    )
    _LastFrozen.pair = (tuple(specs), text)
    return text


@lru_cache(maxsize=THAWED)
def thaw(frozen: str) -> tuple[ToolSpec, ...]:
    """The specs ``freeze`` wrote, in their order. Shared by every turn of the sessions
    that froze this list, so their encoding is kept too (``core.models.wire``): never
    change a spec in place."""
    return tuple(ToolSpec(s["name"], s["description"], s["parameters"]) for s in json.loads(frozen))


def place_of(row: SessionRow) -> ToolPlace:
    return ToolPlace(row.platform, row.chat_id, row.route)


@record
class ToolOffer:
    """The tools one turn sends, and which calls it refuses (module docstring)."""

    specs: tuple[ToolSpec, ...]
    place: ToolPlace
    policy: ToolPolicy

    def refusal(self, name: str, available: Collection[str]) -> str | None:
        """Why a call of ``name`` is not run, or None when it may run."""
        if name not in {s.name for s in self.specs}:
            return f"{name!r} is not offered in this session. Use only the tools you were given."
        if not self.policy.permits(name, self.place):
            return f"{name!r} is refused by this chat's tool policy."
        if name not in available:
            return (
                f"{name!r} is not available right now: its implementation is gone or its "
                "server is down. Tell the person; /new starts a session with the tools "
                "available now."
            )
        return None


class SessionTools:
    """The registry's tools as the policy offers them to a place (module docstring)."""

    def __init__(self, registry: ToolRegistry, policy: ToolPolicy) -> None:
        self._registry = registry
        self._policy = policy

    def offered(self, place: ToolPlace, only: Collection[str] | None = None) -> list[ToolSpec]:
        """What a session opened now at ``place`` gets (within ``only``, if given)."""
        specs = self._registry.specs()
        names = set(self._policy.allowed([s.name for s in specs], place))
        return [s for s in specs if s.name in names and (only is None or s.name in only)]

    def offer(self, row: SessionRow) -> ToolOffer:
        """What a turn of ``row``'s session sends: its frozen list."""
        place = place_of(row)
        specs = thaw(row.tool_specs) if row.tool_specs is not None else tuple(self.offered(place))
        return ToolOffer(specs, place, self._policy)

    def change_line(self, row: SessionRow) -> str | None:
        """A ``/status`` line when a new session would be offered other tools."""
        if row.tool_specs is None:
            return None
        frozen = [s.name for s in thaw(row.tool_specs)]
        now = [s.name for s in self.offered(place_of(row))]
        added = [f"+{n}" for n in now if n not in frozen]
        removed = [f"-{n}" for n in frozen if n not in now]
        if not added and not removed:
            return None
        return (
            f"Tools changed since this session began: {', '.join(added + removed)}; "
            "/new to use them"
        )
