"""Tracked background tasks: none is fire-and-forget, every failure is logged."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)

# How long ``close`` waits, twice at most, for a task that runs a library's I/O (an MCP
# transport, a platform's connection): long enough for a polite close (the MCP SDK gives
# a stdio server 2 s to exit), short enough that a stop never seems to hang.
LIBRARY_STOP_GRACE_SECONDS = 5.0


class TaskSet:
    """Owns background tasks until they finish; ``close`` cancels and awaits the rest."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=f"{self._name}:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def __len__(self) -> int:
        return len(self._tasks)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("background task %s failed", task.get_name(), exc_info=exc)

    async def wait(self) -> None:
        """Return once every task (including ones spawned meanwhile) has finished."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self, *, grace: float | None = None) -> None:
        """Cancel every task and wait until they have finished.

        With ``grace`` (seconds) the wait is bounded: a task still running that long
        after its cancellation is cancelled once more (a library may swallow one
        cancellation in its own cleanup), and one still running after a second
        ``grace`` is left behind, named in an error logged, rather than holding up
        whatever is closing (a gateway's shutdown) forever.
        """
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if grace is None or not tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        if pending:
            log.warning(
                "%s still running %g s after cancellation, cancelling again", _names(pending), grace
            )
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=grace)
        if pending:
            log.error("%s did not stop after two cancellations; left behind", _names(pending))


def _names(tasks: set[asyncio.Task[Any]]) -> str:
    return "background task(s) " + ", ".join(sorted(t.get_name() for t in tasks))
