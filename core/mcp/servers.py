"""One configured MCP server, and the SDK client that talks to it.

A server runs as a subprocess speaking stdio (``command``) or answers Streamable HTTP
(``url``). Its ``env`` and ``headers`` values may be secrets: they are kept out of
``repr`` and scrubbed from every error text we show (``ServerConfig.scrub``).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Literal

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

Transport = Literal["stdio", "http"]
_REDACTED = "<redacted>"
# Shorter values would scrub ordinary words out of error texts.
_MIN_SECRET_CHARS = 4
# The SDK's own defaults: a server may hold a response stream open for minutes.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """``mcp.servers.<name>`` as the core uses it: exactly one of ``command`` / ``url``."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    enabled: bool = True
    # Bounds the handshake, the tool listing and each tool call.
    timeout_seconds: float = 60.0
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @property
    def transport(self) -> Transport:
        return "http" if self.url is not None else "stdio"

    @property
    def target(self) -> str:
        """What it runs or reaches, for people: the command line or the URL."""
        if self.url is not None:
            return self.url
        return " ".join((self.command or "", *self.args))

    def scrub(self, text: str) -> str:
        """``text`` without any of this server's env or header values."""
        secrets = sorted(
            (
                v
                for v in (*self.env.values(), *self.headers.values())
                if len(v) >= _MIN_SECRET_CHARS
            ),
            key=len,
            reverse=True,
        )
        for secret in secrets:
            text = text.replace(secret, _REDACTED)
        return text


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
