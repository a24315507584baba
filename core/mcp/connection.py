"""One MCP server kept connected in the background, and its bounded tool calls.

``ServerConnection.run`` loops until cancelled: connect (the handshake and the tool
listing bounded by ``timeout_seconds``), hand the tool list to ``on_tools``, then watch
the connection (a call that finds it closed, or a failed probe every ``PROBE_SECONDS``)
and, once it is lost, connect again after a ``core.retry.Backoff`` pause. The state is
``connecting`` until the first attempt ends, then ``connected`` or ``failed``; retries
after a failure stay ``failed`` (with the last error) until one works. A crashed
stdio server is thereby restarted; a dropped HTTP session opened again.

The SDK client is entered and left inside ``run``'s task (its cancel scopes require
it); turns only call ``call``, which never waits longer than ``timeout_seconds`` and
answers an error payload when the server is not connected.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from typing import Any

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED
from mcp_types import Tool as RemoteSpec

from core.mcp import results
from core.mcp.client import open_client
from core.mcp.servers import STATES, ServerConfig, State
from core.record import record
from core.retry import Backoff

log = logging.getLogger(__name__)

# How often an idle connection is checked; a call finds a closed one at once.
PROBE_SECONDS = 15.0
# Connected this long, a loss starts the backoff from its first pause again.
STABLE_SECONDS = 30.0
_MAX_PAGES = 50


@record
class RemoteTool:
    """A tool as its server lists it."""

    name: str
    description: str
    schema: dict[str, Any]
    destructive: bool


ToolsListed = Callable[["ServerConnection", Sequence[RemoteTool]], None]


class ServerConnection:
    """The live state of one configured server (see the module docstring)."""

    def __init__(
        self,
        config: ServerConfig,
        on_tools: ToolsListed,
        backoff: Backoff,
        *,
        max_result_chars: int,
        version: str = "",
    ) -> None:
        self.config = config
        self.state: State = "connecting" if config.enabled else "disabled"
        self.last_error = ""
        self.tools: tuple[RemoteTool, ...] = ()
        self._on_tools = on_tools
        self._backoff = backoff
        self._max_result_chars = max_result_chars
        self._version = version
        self._client: Client | None = None
        self._lost = asyncio.Event()
        self._attempted = asyncio.Event()
        # One event per state, set while the connection is in it.
        self._in = {state: asyncio.Event() for state in STATES}
        self._in[self.state].set()

    @property
    def name(self) -> str:
        return self.config.name

    async def run(self) -> None:
        """Connect, watch, reconnect: until cancelled."""
        while True:
            began = time.monotonic()
            try:
                await self._connection()
            except Exception as exc:  # noqa: BLE001 - the transport's own tasks failed
                # (an HTTP server gone away raises out of the SDK's task group)
                self._client = None
                self._fail(self._text(exc))
            if time.monotonic() - began >= STABLE_SECONDS:
                self._backoff.reset()
            await asyncio.sleep(self._backoff.next())

    async def attempted(self) -> None:
        """Return once the first connection attempt has ended (either way)."""
        await self._attempted.wait()

    async def reached(self, state: State) -> None:
        """Return once the connection is in ``state`` (callers bound the wait)."""
        await self._in[state].wait()

    def _set(self, state: State) -> None:
        self._in[self.state].clear()
        self.state = state
        self._in[state].set()

    async def call(self, tool: str, args: dict[str, Any]) -> str:
        """Call ``tool``; the JSON payload the model reads, an error payload on failure."""
        client, name, seconds = self._client, self.name, self.config.timeout_seconds
        if client is None or self.state != "connected":
            return results.error(f"MCP server '{name}' is not connected ({self._why()})")
        try:
            async with asyncio.timeout(seconds):
                result = await client.call_tool(tool, args)
        except TimeoutError:
            return results.error(
                f"MCP server '{name}' did not answer {tool} within {seconds:g} s "
                f"(mcp.servers.{name}.timeout_seconds); the call was abandoned"
            )
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED:
                return results.error(f"MCP server '{name}' refused {tool}: {self._text(exc)}")
            self._lose("connection closed")
            return results.error(f"MCP server '{name}' is not connected ({self._why()})")
        return results.payload(result, self._max_result_chars)

    async def _connection(self) -> None:
        if self.state != "failed":  # a retry stays "failed", with its error, until it works
            self._set("connecting")
        self._lost = asyncio.Event()
        async with AsyncExitStack() as stack:
            try:
                async with asyncio.timeout(self.config.timeout_seconds):
                    client = await stack.enter_async_context(
                        open_client(self.config, self._version)
                    )
                    listed = await _list_tools(client)
            except TimeoutError:
                self._fail(f"no answer within {self.config.timeout_seconds:g} s")
                return
            except Exception as exc:  # noqa: BLE001 - whatever a server does, the loop goes on
                self._fail(self._text(exc))
                return
            self._connected(client, listed)
            try:
                await self._watch(client)
            finally:
                self._client = None

    def _connected(self, client: Client, listed: Sequence[RemoteTool]) -> None:
        self.tools, self.last_error = tuple(listed), ""
        self._client = client
        self._set("connected")
        log.info("mcp server %s connected: %d tools", self.name, len(listed))
        self._on_tools(self, self.tools)
        self._attempted.set()

    async def _watch(self, client: Client) -> None:
        while not self._lost.is_set():
            try:
                async with asyncio.timeout(PROBE_SECONDS):
                    await self._lost.wait()
            except TimeoutError:
                await self._probe(client)

    async def _probe(self, client: Client) -> None:
        # The 2026-07-28 protocol has no ping: a fresh tool listing is the cheapest
        # request every server answers. Any answer, an error one too, means it is there.
        try:
            async with asyncio.timeout(self.config.timeout_seconds):
                await client.list_tools(cache_mode="refresh")
        except TimeoutError:
            self._lose(f"no answer to a probe within {self.config.timeout_seconds:g} s")
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self._lose("connection closed")
        except Exception as exc:  # noqa: BLE001 - any other failure means it is gone
            self._lose(self._text(exc))

    def _lose(self, reason: str) -> None:
        if self.state == "connected":
            self._fail(reason)
            self._lost.set()

    def _fail(self, reason: str) -> None:
        # Each retry of a broken server fails the same way: say so once, not every pause.
        if self.state != "failed" or reason != self.last_error:
            log.warning("mcp server %s: %s (retrying with backoff)", self.name, reason)
        self.last_error = reason
        self._set("failed")
        self._attempted.set()

    def _why(self) -> str:
        if self.state == "disabled":
            return "disabled in mcp.servers"
        if self.last_error:
            return f"{self.state}: {self.last_error}"
        return self.state

    def _text(self, exc: BaseException) -> str:
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]  # anyio wraps a task's error in a group
        text = str(exc) or exc.__class__.__name__
        # Scrubbed before it is cut, so no part of a secret survives the cut.
        return self.config.scrub(f"{exc.__class__.__name__}: {text}")[:300]


async def _list_tools(client: Client) -> list[RemoteTool]:
    listed: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):  # a paginator that never ends cannot hang the connect
        page = await client.list_tools(cursor=cursor)
        listed += [_remote(spec) for spec in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            break
    return listed


def _remote(spec: RemoteSpec) -> RemoteTool:
    hints = spec.annotations
    destructive = bool(hints is not None and hints.destructive_hint)
    schema = spec.input_schema or {"type": "object", "properties": {}}
    return RemoteTool(spec.name, spec.description or "", dict(schema), destructive)
