"""A many-producer, one-consumer queue that hands its consumer everything queued at once.

The SessionDB's group writer and the audit writer each have one task draining what every
turn queues. ``asyncio.Queue`` does more than they need (per item: a full check, a
waiter scan, an ``Event`` touched by ``task_done``) and it showed in the profile of a
busy gateway: about a hundred of its calls per turn. A ``Mailbox`` appends to a deque
and wakes the one consumer only when it is waiting; ``take`` returns a batch.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class Mailbox(Generic[T]):
    """Items for one consumer task; ``maxsize`` 0 means unbounded."""

    __slots__ = ("_items", "_maxsize", "_waiter", "_unfinished", "_drained")

    def __init__(self, maxsize: int = 0) -> None:
        self._items: deque[T] = deque()
        self._maxsize = maxsize
        self._waiter: asyncio.Future[None] | None = None
        self._unfinished = 0  # put but not yet marked done by the consumer
        self._drained: asyncio.Future[None] | None = None

    def __len__(self) -> int:
        return len(self._items)

    def put(self, item: T, *, always: bool = False) -> bool:
        """Queue ``item``; False (and nothing queued) when the mailbox is full, unless
        ``always`` (a consumer's stop sign must get in)."""
        if self._maxsize and len(self._items) >= self._maxsize and not always:
            return False
        self._items.append(item)
        self._unfinished += 1
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        return True

    def counted(self) -> None:
        """Count one item its consumer was handed some other way: ``join`` waits until
        it too is marked ``done``."""
        self._unfinished += 1

    async def wait(self) -> None:
        """Return once something is queued."""
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    async def take(self, limit: int) -> list[T]:
        """Wait until something is queued, then return up to ``limit`` items, oldest first.
        The caller reports them handled with ``done`` once it has."""
        await self.wait()
        return self.take_now(limit)

    def take_now(self, limit: int) -> list[T]:
        """Up to ``limit`` queued items, oldest first (none when nothing is queued)."""
        items = self._items
        if len(items) <= limit:
            batch = list(items)
            items.clear()
            return batch
        return [items.popleft() for _ in range(limit)]

    def done(self, count: int) -> None:
        """``count`` items taken earlier are handled."""
        self._unfinished -= count
        drained = self._drained
        if self._unfinished <= 0 and drained is not None and not drained.done():
            drained.set_result(None)

    async def join(self) -> None:
        """Return once every item put so far has been taken and marked done."""
        while self._unfinished > 0:
            self._drained = asyncio.get_running_loop().create_future()
            try:
                await self._drained
            finally:
                self._drained = None
