"""Showing "typing…" in a chat while turns run there, as push platforms do.

One loop per chat (and thread), however many messages wait there, so typing never adds
to a platform's rate limit: ``show(key, turn)`` keeps it up until every turn waiting in
that chat is done. Sending it is a courtesy, never a reason to fail.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

from core.tasks import TaskSet

log = logging.getLogger(__name__)

Key = TypeVar("Key", bound=Hashable)


class TypingIndicator(Generic[Key]):
    """See the module docstring. ``send(key)`` shows typing once in that chat."""

    def __init__(
        self, send: Callable[[Key], Awaitable[Any]], tasks: TaskSet, *, every: float
    ) -> None:
        self._send = send
        self._tasks = tasks
        self._every = every
        self._waiting: dict[Key, set[asyncio.Future[Any]]] = {}

    def show(self, key: Key, turn: Awaitable[Any]) -> None:
        """Show typing in ``key``'s chat until ``turn`` is done."""
        waiting = self._waiting.setdefault(key, set())
        waiting.add(asyncio.ensure_future(asyncio.shield(turn)))
        if len(waiting) == 1:
            self._tasks.spawn(self._loop(key), name=f"typing:{key}")

    async def _loop(self, key: Key) -> None:
        try:
            while True:
                waiting = {t for t in self._waiting.get(key, set()) if not t.done()}
                if not waiting:
                    self._waiting.pop(key, None)  # no await since the check: nothing is lost
                    return
                self._waiting[key] = waiting
                try:
                    await self._send(key)
                except Exception as exc:  # a courtesy: never a reason to fail
                    log.debug("typing in %s not shown: %s", key, exc)
                await asyncio.wait(waiting, timeout=self._every)
        finally:
            for turn in self._waiting.pop(key, set()):
                turn.cancel()
