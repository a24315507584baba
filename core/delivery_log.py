"""Marks replies delivered in bulk: one UPDATE for every reply handed out meanwhile.

Pull-mode adapters (the webhook) hand replies out in HTTP responses; recording each
one in its own write would cost a statement per reply on the hot path. ``note``
queues ids and one flush task writes them; ``close`` flushes what is left.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.clock import Clock
from core.store.db import SessionDB
from core.tasks import TaskSet


class DeliveryLog:
    def __init__(self, db: SessionDB, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._pending: list[int] = []
        self._tasks = TaskSet("delivery-log")

    def note(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        start_flush = not self._pending
        self._pending.extend(ids)
        if start_flush:
            self._tasks.spawn(self._flush(), name="flush")

    async def _flush(self) -> None:
        ids, self._pending = self._pending, []
        await self._db.mark_delivered(ids, self._clock.now())

    async def close(self) -> None:
        if self._pending:
            await self._flush()
        await self._tasks.close()
