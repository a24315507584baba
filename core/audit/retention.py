"""The audit's retention: events older than ``audit.retention_days`` deleted on a schedule."""

from __future__ import annotations

import logging

from core.clock import Clock
from core.store.audit import AuditStore

log = logging.getLogger(__name__)

_DAY = 86_400.0


class AuditRetention:
    def __init__(self, store: AuditStore, clock: Clock, *, days: float) -> None:
        self._store = store
        self._clock = clock
        self._days = days

    async def check(self) -> int:
        """Delete the events older than the retention; how many went."""
        gone = await self._store.prune(self._clock.now() - self._days * _DAY)
        if gone:
            log.info("audit: deleted %d event(s) older than %g days", gone, self._days)
        return gone
