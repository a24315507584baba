"""Retention: sessions ended more than ``retention.sessions_days`` ago are deleted.

A scheduled check (``gateway.features.retention``) deletes them a batch at a time, each
batch one short write transaction, with their messages (and so their search rows),
replies, inbox rows, approvals and reviews; the counts go to the log. An active session
is never pruned, however old: only ended ones.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from core.clock import Clock
from core.store.db import SessionDB

log = logging.getLogger(__name__)
DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class Pruning:
    sessions: int = 0
    messages: int = 0


class Retention:
    def __init__(self, db: SessionDB, clock: Clock, *, days: float, batch: int = 200) -> None:
        self._db = db
        self._clock = clock
        self._days = days
        self._batch = batch

    async def check(self) -> Pruning:
        """Delete every session ended before the cut-off; how many (and messages) went."""
        cutoff = self._clock.now() - self._days * DAY
        sessions = messages = 0
        while True:
            pruned = await self._db.people.prune(cutoff, self._batch)
            sessions += pruned.sessions
            messages += pruned.messages
            if pruned.sessions < self._batch:
                break
        if sessions:
            log.info(
                "retention: deleted %d sessions ended over %g days ago (%d messages)",
                sessions,
                self._days,
                messages,
            )
        return Pruning(sessions, messages)
