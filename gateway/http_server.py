"""The HTTP server ``chatgate run`` serves: uvicorn, bounded and stopped gracefully.

Bounded: every request must arrive whole within ``server.read_timeout_seconds``
(``gateway.http_protocol``), and at most ``server.max_connections`` connections are
served at once; past that uvicorn answers ``503`` (its ``limit_concurrency``).

Logged: one access line per request, the health probes at DEBUG
(``gateway.access_log``).

Stopped gracefully: on SIGTERM or SIGINT the server goes on listening while ``drain``
runs (``gateway.app.drain``: intake stops, the webhook answers ``503`` with
``Retry-After``, running turns get ``server.shutdown_grace`` seconds, the rest are
cancelled and left pending for the next start). Only then does uvicorn close the
listener and the app's lifespan stop the gateway. The process exits 0: a stop that was
asked for is not a crash, where uvicorn would re-raise the signal and systemd or
Docker record a death by signal. A second signal cuts the grace short, unless it comes
within ``SAME_STOP_SECONDS`` of the first: ``make run`` stopped with SIGTERM delivers one
stop twice (to the process group, and again from make, which forwards it to its child).
Setting the ``stop`` event (the gateway lost its database lease) stops the server the
same way.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Awaitable, Callable, Coroutine
from types import FrameType
from typing import Any, TypeVar

import uvicorn

from core.tasks import TaskSet
from gateway import access_log
from gateway.http_protocol import ReadDeadlineProtocol, with_read_timeout
from gateway.settings import ServerSettings

log = logging.getLogger(__name__)

T = TypeVar("T")

# After the drain: how long uvicorn waits for open connections (replies being written,
# clients reading slowly) before it cancels what is left.
CONNECTIONS_CLOSE_SECONDS = 5

# Stop signals this soon after the first are the same stop (see the module docstring);
# a person pressing Ctrl-C again to cut the wait short is slower than this.
SAME_STOP_SECONDS = 1.0


class GracefulServer(uvicorn.Server):
    """A uvicorn server whose stop signals start ``drain`` and whose ticks enforce the
    read deadline (see the module docstring)."""

    def __init__(
        self,
        config: uvicorn.Config,
        drain: Callable[[], Awaitable[None]],
        stop: asyncio.Event | None = None,
    ) -> None:
        super().__init__(config)
        self._drain = drain
        self._stop = stop
        self._signals: list[int] = []
        self._first_signal_at = 0.0
        self._tasks = TaskSet("stop")
        self._draining: asyncio.Task[Any] | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # A signal handler: note the signal, act on it in ``on_tick`` (in the loop).
        # Nothing goes to uvicorn's ``_captured_signals``, so the signal is not re-raised.
        now = time.monotonic()
        if not self._signals:
            self._first_signal_at = now
        elif now - self._first_signal_at < SAME_STOP_SECONDS:
            return
        self._signals.append(sig)

    async def on_tick(self, counter: int) -> bool:
        if self._signals and self._draining is None:
            log.info("%s received: stopping gracefully", signal.Signals(self._signals[0]).name)
            self._draining = self._tasks.spawn(self._drain_safely(), name="drain")
        if self._stop is not None and self._stop.is_set() and self._draining is None:
            self._draining = self._tasks.spawn(self._drain_safely(), name="drain")
        if len(self._signals) > 1 and self._draining is not None and not self._draining.done():
            log.warning("second stop signal: cancelling the running turns now")
            self._draining.cancel()
        if self._draining is not None and self._draining.done():
            self.should_exit = True
        self._check_read_deadlines()
        return await super().on_tick(counter)

    def _check_read_deadlines(self) -> None:
        now = asyncio.get_running_loop().time()
        for connection in list(self.server_state.connections):
            if isinstance(connection, ReadDeadlineProtocol):
                connection.check_read_deadline(now)

    async def shutdown(self, sockets: Any = None) -> None:
        await self._tasks.close()  # nothing of ours outlives the server
        await super().shutdown(sockets)

    async def _drain_safely(self) -> None:
        try:
            await self._drain()
        except Exception:  # the stop goes on: the lifespan's exit closes what is left
            log.exception("graceful stop failed; stopping at once")


def server_config(app: Any, server: ServerSettings) -> uvicorn.Config:
    """uvicorn's configuration for ``server`` (bounds included)."""
    return uvicorn.Config(
        app,
        host=server.host,
        port=server.port,
        log_level=server.log_level,
        log_config=None,
        http=with_read_timeout(server.read_timeout_seconds),
        # uvicorn counts the connection asking among those open: +1 serves exactly
        # ``max_connections`` at once.
        limit_concurrency=server.max_connections + 1,
        timeout_graceful_shutdown=CONNECTIONS_CLOSE_SECONDS,
    )


async def serve(
    app: Any,
    server: ServerSettings,
    *,
    drain: Callable[[], Awaitable[None]],
    stop: asyncio.Event | None = None,
) -> bool:
    """Serve ``app`` until a stop signal or ``stop``; False when the server never started."""
    access_log.install()  # health probes at DEBUG, other requests at INFO
    instance = GracefulServer(server_config(app, server), drain, stop)
    await instance.serve()
    return instance.started


def run_on_server_loop(server: ServerSettings, main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` on the event loop uvicorn would pick (uvloop when it is installed)."""
    factory = server_config(None, server).get_loop_factory()
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)
