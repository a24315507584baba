"""Every configured MCP server, and their tools in the ``ToolRegistry``.

``McpManager`` is entered once (``async with``): each enabled server connects in its own
background task, so a slow or broken one delays neither start-up nor the others. As a
server's tool list becomes known (at start, after a reconnect) its tools replace the
ones it had in the registry. A tool whose model name is already taken (by a built-in
tool, another server's, or an earlier tool of the same server after sanitising) is
refused with one warning naming both; the one registered first keeps the name.
``reload`` stops every server and starts them again from new configs (``/reload-mcp``).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from core.mcp.naming import model_name, offered
from core.mcp.servers import ServerConfig, State, Transport
from core.mcp.tool import McpTool
from core.models.base import ToolSpec
from core.record import record
from core.retry import Backoff
from core.tasks import LIBRARY_STOP_GRACE_SECONDS, TaskSet
from core.tools import ToolRegistry

if TYPE_CHECKING:  # the connection imports the MCP SDK (~0.4 s): only a server needs it
    from core.mcp.connection import RemoteTool, ServerConnection

log = logging.getLogger(__name__)

BackoffFactory = Callable[[], Backoff]
# A failed attempt may still be stopping its subprocess when its timeout has run out.
SETTLE_GRACE_SECONDS = 5.0


def default_backoff() -> Backoff:
    return Backoff(first_seconds=0.5, max_seconds=60.0, jitter=random.uniform)


@record
class ServerStatus:
    """What ``/status``, ``/metrics`` and ``chatgate mcp list`` show of one server."""

    name: str
    transport: Transport
    state: State
    tools: tuple[str, ...]  # the model names offered
    refused: tuple[str, ...]  # the server's tools refused for a clashing name
    last_error: str


class McpManager:
    """See the module docstring."""

    def __init__(
        self,
        registry: ToolRegistry,
        configs: Sequence[ServerConfig],
        *,
        max_result_chars: int,
        version: str = "",
        backoff: BackoffFactory = default_backoff,
    ) -> None:
        self._registry = registry
        self._configs = tuple(configs)
        self._max_result_chars = max_result_chars
        self._version = version
        self._backoff = backoff
        self._servers: dict[str, ServerConnection] = {}
        self._names: dict[str, tuple[str, ...]] = {}  # server -> model names it holds
        self._refused: dict[str, tuple[str, ...]] = {}
        self._tasks = TaskSet("mcp")

    async def __aenter__(self) -> McpManager:
        self._start(self._configs)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._stop()

    async def reload(self, configs: Sequence[ServerConfig]) -> None:
        """Stop every server, drop their tools, and start ``configs``."""
        await self._stop()
        self._configs = tuple(configs)
        self._start(self._configs)

    async def settled(self, grace: float = SETTLE_GRACE_SECONDS) -> None:
        """Return once every enabled server has made its first attempt, or after the
        longest ``timeout_seconds`` and ``grace`` (a server still connecting then stays
        ``connecting``)."""
        live = [c for c in self._servers.values() if c.state != "disabled"]
        if not live:
            return
        bound = max(c.config.timeout_seconds for c in live) + grace
        try:
            async with asyncio.timeout(bound):
                await asyncio.gather(*(c.attempted() for c in live))
        except TimeoutError:
            return

    def statuses(self) -> list[ServerStatus]:
        return [self._status(conn) for conn in self._servers.values()]

    def connection(self, server: str) -> ServerConnection | None:
        return self._servers.get(server)

    def _status(self, conn: ServerConnection) -> ServerStatus:
        return ServerStatus(
            conn.name,
            conn.config.transport,
            conn.state,
            self._names.get(conn.name, ()),
            self._refused.get(conn.name, ()),
            conn.last_error,
        )

    def _start(self, configs: Sequence[ServerConfig]) -> None:
        self._tasks = TaskSet("mcp")
        if not configs:
            return
        from core.mcp.connection import ServerConnection

        for config in configs:
            conn = ServerConnection(
                config,
                self._listed,
                self._backoff(),
                max_result_chars=self._max_result_chars,
                version=self._version,
            )
            self._servers[config.name] = conn
            if config.enabled:
                self._tasks.spawn(conn.run(), name=config.name)

    async def _stop(self) -> None:
        # Bounded: a transport that never finishes its cleanup (a stdio server whose
        # child keeps the pipes open) must not hold the gateway's shutdown forever.
        await self._tasks.close(grace=LIBRARY_STOP_GRACE_SECONDS)
        for server in list(self._names):
            self._drop(server)
        self._servers.clear()
        self._refused.clear()

    def _drop(self, server: str) -> None:
        for name in self._names.pop(server, ()):
            self._registry.unregister(name)

    def _listed(self, conn: ServerConnection, listed: Sequence[RemoteTool]) -> None:
        """``conn``'s tool list is known: its tools replace the ones it had."""
        self._drop(conn.name)
        config = conn.config
        mine: dict[str, str] = {}  # model name -> the server's tool name
        refused: list[str] = []
        for remote in listed:
            if not offered(remote.name, config.include, config.exclude):
                continue
            name = model_name(conn.name, remote.name)
            holder = self._holder(name, mine)
            if holder is not None:
                log.warning(
                    "mcp server %s: tool %r is refused: its name %s is taken by %s",
                    conn.name,
                    remote.name,
                    name,
                    holder,
                )
                refused.append(remote.name)
                continue
            self._registry.register(self._tool(conn.name, name, remote))
            mine[name] = remote.name
        self._names[conn.name], self._refused[conn.name] = tuple(mine), tuple(refused)

    def _holder(self, name: str, mine: dict[str, str]) -> str | None:
        """Who already has ``name``, in words for the refusal's log line; None: nobody."""
        if name in mine:
            return f"its tool {mine[name]!r}"
        for other, names in self._names.items():
            if name in names:
                return f"MCP server {other}'s tool"
        return "a built-in tool" if name in self._registry.names() else None

    def _tool(self, server: str, name: str, remote: RemoteTool) -> McpTool:
        spec = ToolSpec(name, remote.description, remote.schema)
        return McpTool(spec, server, remote.name, destructive=remote.destructive, caller=self._call)

    async def _call(self, server: str, tool: str, args: dict[str, Any]) -> str:
        conn = self._servers.get(server)
        if conn is None:
            from core.mcp import results  # imported already: the tool came from a server

            return results.error(f"MCP server '{server}' is not configured any more")
        return await conn.call(tool, args)
