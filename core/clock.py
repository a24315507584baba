"""The clock every time-based decision reads, so tests can move time without sleeping."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Wall-clock time in unix seconds (UTC)."""

    def now(self) -> float: ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that only moves when told to; for tests and simulations."""

    def __init__(self, start: float = 1_780_000_000.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds
