"""The SDK client for one configured MCP server (``core.mcp.servers.ServerConfig``)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

from core.mcp.servers import ServerConfig

# The SDK's own defaults: a server may hold a response stream open for minutes.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


@asynccontextmanager
async def open_client(config: ServerConfig, version: str = "") -> AsyncIterator[Client]:
    """A connected SDK ``Client`` for ``config`` (the handshake done); closing it stops
    the subprocess or ends the HTTP session."""
    info = Implementation(name="chatgate", version=version)
    async with AsyncExitStack() as stack:
        if config.url is not None:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=dict(config.headers), timeout=_HTTP_TIMEOUT)
            )
            transport = streamable_http_client(config.url, http_client=http)
        else:
            params = StdioServerParameters(
                command=config.command or "",
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd,
            )
            # The server's stderr is its own log; it goes where ours does.
            transport = stdio_client(params, errlog=sys.stderr)
        client = Client(transport, client_info=info, cache=None)
        yield await stack.enter_async_context(client)
