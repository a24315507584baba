"""Run the real gateway app on 127.0.0.1 inside a test, over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

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
