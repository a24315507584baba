"""Serve any ASGI app on 127.0.0.1 inside the test's event loop: fakes and the gateway."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Generator
from typing import Literal

import uvicorn
from starlette.types import ASGIApp


class _SignalFreeServer(uvicorn.Server):
    """A uvicorn server that leaves the process's signal handlers alone.

    Several fakes start and stop inside one pytest process; letting each install
    and restore SIGINT handlers could leave Ctrl-C pointing at a dead server.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class LoopbackServer:
    """Serves an ASGI app on 127.0.0.1:<ephemeral port> inside the current event loop."""

    def __init__(
        self, app: ASGIApp, *, lifespan: Literal["on", "off"] = "off", port: int = 0
    ) -> None:
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            lifespan=lifespan,
            log_config=None,  # leave the test process's logging configuration alone
            access_log=False,
            timeout_graceful_shutdown=2,
        )
        self._server = _SignalFreeServer(config)
        self._task: asyncio.Task[None] | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``, valid once started."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Start serving; return once the socket accepts connections."""
        self._task = asyncio.create_task(self._server.serve(), name="loopback-server")
        while not self._server.started:
            if self._task.done():
                await self._task  # surfaces the startup error
                raise RuntimeError("the loopback server stopped during startup")
            await asyncio.sleep(0.005)  # uvicorn offers a flag, not an event
        sockets = self._server.servers[0].sockets
        self.port = int(sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop serving and wait for the server task to finish."""
        if self._task is None:
            return
        self._server.should_exit = True
        await self._task
        self._task = None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
