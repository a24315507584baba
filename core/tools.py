"""The tool registry: what the model may call during a turn.

Later capabilities (memory, session search, skills, cron) register their tools here;
the turn loop only knows this registry. MCP servers register theirs as their tool lists
become known, after start-up too, and ``unregister`` them when a list changes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Literal, Protocol

from core.media.refs import MediaRef
from core.models.base import ToolCall, ToolSpec
from core.record import record

log = logging.getLogger(__name__)

# On whose behalf a tool writes: a foreground turn writes for the person in the chat; the
# background review (and the curator's consolidation, which writes as it does) for the agent.
WriteOrigin = Literal["foreground", "background_review"]
WRITE_ORIGINS: tuple[WriteOrigin, ...] = ("foreground", "background_review")


@record
class ToolContext:
    """Who is calling: the session and chat a tool call belongs to, and on whose behalf.

    ``origin`` decides provenance: only a ``background_review`` write makes a skill the
    agent's (``created_by: agent``); a foreground write is the person's.
    """

    session_id: str
    session_key: str
    platform: str
    chat_id: str
    user_id: str
    thread_id: str | None = None
    route: str | None = None
    origin: WriteOrigin = "foreground"
    # Attaches a stored file to this call's result (``send_file``): the turn's reply
    # carries the files its tool results attached. None outside a turn's tool loop.
    attach: Callable[[MediaRef], None] | None = None


class Tool(Protocol):
    """A tool the model can call. ``call`` returns the JSON text the model reads."""

    @property
    def spec(self) -> ToolSpec: ...

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str: ...


class ToolRegistry:
    """Tools by name, in registration order."""

    def __init__(self, *, refusal: str | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._refusal = refusal
        # A view (see ``restricted``) reads its parent's tools through this filter.
        self._parent: ToolRegistry | None = None
        self._allowed: Callable[[str], bool] = _everything

    def restricted(self, allowed: Callable[[str], bool], refusal: str) -> ToolRegistry:
        """A live view of the tools whose names pass ``allowed`` (same objects, same
        order, tools registered later included); other calls get ``refusal``."""
        view = ToolRegistry(refusal=refusal)
        view._parent = self
        view._allowed = allowed
        return view

    def register(self, tool: Tool) -> None:
        if self._parent is not None:
            raise ValueError("a restricted view takes no tools of its own")
        name = tool.spec.name
        if name in self._tools:
            raise ValueError(f"tool {name!r} is already registered")
        self._tools[name] = tool

    def unregister(self, name: str) -> bool:
        """Remove the tool called ``name`` (a tool source whose list changed, such as an
        MCP server, replaces its tools this way); False when there was none."""
        if self._parent is not None:
            raise ValueError("a restricted view takes no tools of its own")
        return self._tools.pop(name, None) is not None

    def get(self, name: str) -> Tool | None:
        """The visible tool called ``name``, if any (its object, e.g. to read a hint)."""
        return self._visible().get(name)

    def specs(self) -> list[ToolSpec]:
        return [t.spec for t in self._visible().values()]

    def names(self) -> list[str]:
        return list(self._visible())

    def destructive(self, name: str) -> bool:
        """Whether the tool called ``name`` says it may destroy something (an MCP
        server's ``destructiveHint``): its calls wait for a person's approval."""
        return getattr(self._visible().get(name), "destructive", False) is True

    def _visible(self) -> dict[str, Tool]:
        if self._parent is None:
            return self._tools
        return {n: t for n, t in self._parent._visible().items() if self._allowed(n)}

    async def run(self, call: ToolCall, ctx: ToolContext) -> str:
        """Run one call; any failure becomes an error payload the model can act on."""
        tools = self._visible()
        tool = tools.get(call.name)
        if tool is None and self._refusal is not None:
            return tool_error(f"{call.name!r} is refused: {self._refusal}")
        if tool is None:
            return tool_error(f"Unknown tool {call.name!r}. Available: {', '.join(tools)}")
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return tool_error(f"Arguments are not valid JSON: {exc.msg} at position {exc.pos}")
        if not isinstance(args, dict):
            return tool_error("Arguments must be a JSON object")
        try:
            return await tool.call(args, ctx)
        except Exception as exc:  # a broken tool must not end the turn
            log.exception("tool %s failed", call.name)
            return tool_error(f"{call.name} failed: {exc.__class__.__name__}: {exc}")


def _everything(_name: str) -> bool:
    return True


def tool_error(message: str) -> str:
    """The error payload a refused or failed call answers the model with."""
    return json.dumps({"success": False, "error": message})


_FAILED = tool_error("")[: len('{"success": false')]


def failed(output: str) -> bool:
    """Whether a tool's result is an error payload (``tool_error``'s shape)."""
    return output.startswith(_FAILED)
