"""Shared pieces of the MCP tests: config blocks for the fake server and waits."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from core.mcp.connection import ServerConnection
from core.mcp.manager import McpManager
from core.mcp.servers import State
from gateway.features.mcp import Mcp
from tests.fakes.loopback import LoopbackServer
from tests.fakes.mcp_server import build_server
from tests.gateway_server import RunningGateway

FAKE_SERVER = Path(__file__).parent / "fakes" / "mcp_server.py"
# Bounds every wait on a server's state: a Python server starts in about a second.
WAIT_SECONDS = 30


def stdio_block(name: str, *flags: str, **settings: Any) -> str:
    """``mcp.servers.<name>`` running the fake server over stdio (as YAML lines)."""
    lines = [
        f"    {name}:",
        f"      command: {json.dumps(sys.executable)}",
        f"      args: {json.dumps([str(FAKE_SERVER), *flags])}",
    ]
    lines += [f"      {key}: {json.dumps(value)}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def http_block(name: str, url: str, **settings: Any) -> str:
    lines = [f"    {name}:", f"      url: {json.dumps(url)}"]
    lines += [f"      {key}: {json.dumps(value)}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def write_config(home: Path, *blocks: str, extra: str = "") -> None:
    text = "webhook:\n  owners: [u1]\nmcp:\n  servers:\n" + "".join(blocks) + extra
    (home / "config.yaml").write_text(text, encoding="utf-8")


def manager_of(gw: RunningGateway) -> McpManager:
    manager = gw.gateway.feature(Mcp).manager
    assert manager is not None
    return manager


def connection(gw: RunningGateway, name: str) -> ServerConnection:
    conn = manager_of(gw).connection(name)
    assert conn is not None
    return conn


async def reached(gw: RunningGateway, name: str, state: State) -> ServerConnection:
    conn = connection(gw, name)
    async with asyncio.timeout(WAIT_SECONDS):
        await conn.reached(state)
    return conn


@asynccontextmanager
async def http_mcp_server(name: str = "web", port: int = 0) -> AsyncIterator[str]:
    """The fake MCP server over Streamable HTTP on 127.0.0.1; yields its endpoint URL."""
    app = build_server(name).streamable_http_app()
    server = LoopbackServer(app, lifespan="on", port=port)
    await server.start()
    try:
        yield f"{server.url}/mcp"
    finally:
        await server.stop()
