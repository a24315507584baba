"""Retention: ended sessions and the delivery queue's old rows deleted on a schedule.

A scheduled check (``gateway.features.retention``) does two things, each a batch at a
time, each batch one short write transaction, the counts to the log:

- sessions ended more than ``retention.sessions_days`` ago are deleted with their
  messages (and so their search rows), replies, inbox rows, approvals and reviews. An
  active session is never pruned, however old: only ended ones. Off unless set.
- handled messages and sent replies older than ``retention.queue_days`` leave the inbox
  and the outbox (``core.store.queue_retention``); the transcript stays.
"""

from __future__ import annotations

import logging

from core.clock import Clock
from core.record import record
from core.store.db import SessionDB

log = logging.getLogger(__name__)
DAY = 86_400.0


@record
class Pruning:
    sessions: int = 0
    messages: int = 0
    # the delivery queue: handled inbox rows and sent replies
    inbox: int = 0
    replies: int = 0


class Retention:
    def __init__(
        self,
        db: SessionDB,
        clock: Clock,
        *,
        sessions_days: float | None,
        queue_days: float | None,
        batch: int = 200,
    ) -> None:
        self._db = db
        self._clock = clock
        self._sessions_days = sessions_days
        self._queue_days = queue_days
        self._batch = batch

    async def check(self) -> Pruning:
        """Delete what is past its retention; how many sessions (and their messages),
        inbox rows and replies went."""
        sessions = messages = 0
        if self._sessions_days is not None:
            sessions, messages = await self._sessions(self._sessions_days)
        inbox = replies = 0
        if self._queue_days is not None:
            before = self._clock.now() - self._queue_days * DAY
            queue = await self._db.prune_queue(before)
            inbox, replies = queue.messages, queue.replies
            if inbox or replies:
                log.info(
                    "retention: deleted %d handled message(s) and %d sent reply(ies) from "
                    "the delivery queue, older than %g days",
                    inbox,
                    replies,
                    self._queue_days,
                )
        return Pruning(sessions, messages, inbox, replies)

    async def _sessions(self, days: float) -> tuple[int, int]:
        cutoff = self._clock.now() - days * DAY
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
                days,
                messages,
            )
        return sessions, messages
