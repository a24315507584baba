"""The clock every time-based decision reads, so tests can move time without sleeping."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    """Wall-clock time in unix seconds (UTC), and a wait until a moment of it."""

    def now(self) -> float: ...

    async def sleep_until(self, when: float) -> None:
        """Return once ``now()`` has reached ``when`` (at once if it already has)."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        return time.time()

    async def sleep_until(self, when: float) -> None:
        await asyncio.sleep(max(0.0, when - time.time()))


class ManualClock:
    """A clock that only moves when told to; for tests and simulations. ``advance``
    wakes whoever sleeps until a moment it has passed (from any thread)."""

    def __init__(self, start: float = 1_780_000_000.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds
        due = [s for s in self._sleepers if s[0] <= self._now]
        self._sleepers = [s for s in self._sleepers if s[0] > self._now]
        for _, waiter in due:
            waiter.get_loop().call_soon_threadsafe(_wake, waiter)

    async def sleep_until(self, when: float) -> None:
        if when <= self._now:
            return
        sleeper = (when, asyncio.get_running_loop().create_future())
        self._sleepers.append(sleeper)
        try:
            await sleeper[1]
        finally:
            if sleeper in self._sleepers:
                self._sleepers.remove(sleeper)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
