"""One MCP server's tool as a ``core.tools.Tool``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from core.models.base import ToolSpec
from core.tools import ToolContext

# (server, the server's own tool name, arguments) -> the JSON text the model reads.
Caller = Callable[[str, str, dict[str, Any]], Awaitable[str]]


class McpTool:
    """``mcp_<server>_<tool>``: calls go to whichever connection of ``server`` is live.

    ``destructive`` is True when the server's annotations set ``destructiveHint``; the
    approvals read it with ``getattr(tool, "destructive", False)``.
    """

    def __init__(
        self, spec: ToolSpec, server: str, remote: str, *, destructive: bool, caller: Caller
    ) -> None:
        self._spec = spec
        self.server = server
        self.remote = remote
        self.destructive = destructive
        self._caller = caller

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        return await self._caller(self.server, self.remote, args)
