"""The signatures the webhook has already accepted, for as long as they could be replayed.

A signature is fresh while its timestamp is within ``max_skew_seconds`` of the clock,
so it is remembered until then and forgotten after: the cache holds one window's
worth of requests. Past ``capacity`` live entries it refuses new signatures
(``ReplayCacheFull``) rather than forget live ones, since a forgotten signature could
be replayed; the client retries once older entries expire.
"""

from __future__ import annotations

import heapq

from core.errors import RequestRefused

FULL = "too many signed requests in the replay window; retry shortly"


class ReplayCache:
    """See the module docstring. Not thread-safe: one event loop uses it."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._live: set[bytes] = set()
        self._heap: list[tuple[float, bytes]] = []

    def __len__(self) -> int:
        return len(self._live)

    def seen(self, signature: bytes, *, now: float, expires_at: float) -> bool:
        """Whether ``signature`` was seen before; remember it until ``expires_at`` if not.

        Raises ``RequestRefused`` (503) when the cache is full of live signatures."""
        self._expire(now)
        if signature in self._live:
            return True
        if len(self._live) >= self._capacity:
            raise RequestRefused(503, FULL, {"Retry-After": "1"})
        self._live.add(signature)
        heapq.heappush(self._heap, (expires_at, signature))
        return False

    def _expire(self, now: float) -> None:
        while self._heap and self._heap[0][0] < now:
            _, signature = heapq.heappop(self._heap)
            self._live.discard(signature)
