"""One configured MCP server (the SDK client that talks to it is ``core.mcp.client``,
kept apart so that reading the settings never imports the SDK).

A server runs as a subprocess speaking stdio (``command``) or answers Streamable HTTP
(``url``). Its ``env`` and ``headers`` values may be secrets: they are kept out of
``repr`` and scrubbed from every error text we show (``ServerConfig.scrub``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Literal

from core.record import record

Transport = Literal["stdio", "http"]
# A server connection's state (``core.mcp.connection``), named here so that settings,
# status and metrics code need not import the SDK.
State = Literal["connecting", "connected", "failed", "disabled"]
STATES: tuple[State, ...] = ("connecting", "connected", "failed", "disabled")
_REDACTED = "<redacted>"
# Shorter values would scrub ordinary words out of error texts.
_MIN_SECRET_CHARS = 4


@record
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
