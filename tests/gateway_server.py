"""Run the real gateway app on 127.0.0.1 inside a test, over real HTTP."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from core.clock import Clock
from core.tools import Tool
from gateway.app import create_app
from gateway.config import Settings, load_settings
from gateway.runtime import Gateway
from tests.fakes.loopback import LoopbackServer


@dataclass
class RunningGateway:
    app: FastAPI
    base_url: str
    client: httpx.AsyncClient
    settings: Settings

    @property
    def gateway(self) -> Gateway:
        gateway: Gateway = self.app.state.gateway
        return gateway

    async def say(
        self,
        text: str,
        *,
        chat_id: str = "c1",
        user_id: str = "u1",
        route: str = "demo",
        **extra: object,
    ) -> httpx.Response:
        body = {"chat_id": chat_id, "user_id": user_id, "text": text, **extra}
        return await self.client.post(f"/webhook/{route}", json=body)


@asynccontextmanager
async def running_gateway(
    home: Path,
    env: Mapping[str, str] | None = None,
    *,
    tools: Sequence[Tool] = (),
    clock: Clock | None = None,
) -> AsyncIterator[RunningGateway]:
    """Start ``chatgate run``'s app for ``home`` on a free port; stop it on exit."""
    settings = load_settings(home, env or {})
    app = create_app(settings, tools=tools, clock=clock)
    server = LoopbackServer(app, lifespan="on")
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            yield RunningGateway(app, server.url, client, settings)
    finally:
        await server.stop()


def tool_result(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON result of the tool call that ``request`` (to the fake model) answers."""
    last = request["messages"][-1]
    assert last["role"] == "tool"
    result: dict[str, Any] = json.loads(last["content"])
    return result


async def notes_stored(home: Path, count: int) -> None:
    """Wait (bounded) until the notes provider's background sync stored ``count`` rows."""
    path = home / "memory_provider" / "notes.sqlite3"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while loop.time() < deadline:
        if path.exists():
            with sqlite3.connect(path) as conn:
                if conn.execute("SELECT count(*) FROM exchanges").fetchone()[0] >= count:
                    return
        await asyncio.sleep(0.02)  # noqa: ASYNC110 - polling another store's file
    raise AssertionError(f"the provider did not store {count} exchanges in time")
