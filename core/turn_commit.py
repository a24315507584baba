"""Committing a turn's outcome even when the store cannot write for a while.

A turn whose outcome meets a ``StoreUnavailable`` (disk full, database locked,
read-only, unreachable) is not a crashed turn: the outcome computed is kept and its
commit retried, paced by ``core.retry.Backoff`` and woken as soon as the store health
tracker sees the store write again, so the model is not asked twice and the chat gets
exactly one answer. A message older than ``max_age_seconds`` is given up instead: its
item is marked failed with one notice to its chat (committed the same patient way).
Work that met the outage before it had an outcome (opening the session, say) runs
again from the start (``TurnRetry``): nothing of a turn is stored before its outcome.
"""

from __future__ import annotations

import logging

from core.clock import Clock
from core.errors import StoreUnavailable
from core.messages import OutboundMessage
from core.record import record
from core.retry import Backoff
from core.store.db import SessionDB
from core.store.records import InboxItem, TurnOutcome

log = logging.getLogger(__name__)

NOT_ANSWERED = (
    "Sorry, I could not answer this message: my storage was unavailable for too long. "
    "Please send it again."
)
FIRST_RETRY_SECONDS = 0.05


@record
class CommitPolicy:
    """How long a turn keeps trying to commit (``recovery:`` settings)."""

    # A message older than this is given up: one notice, its item failed.
    max_age_seconds: float = 3600.0
    # The longest pause between two commit tries (a recovered store wakes them at once).
    retry_max_seconds: float = 5.0


@record
class Committed:
    """What was committed (the outcome given, or the given-up notice) and its replies."""

    outcome: TurnOutcome
    replies: list[OutboundMessage]


class TurnCommitter:
    """See the module docstring."""

    def __init__(self, db: SessionDB, clock: Clock, policy: CommitPolicy) -> None:
        self._db = db
        self._clock = clock
        self._policy = policy

    def backoff(self) -> Backoff:
        return Backoff(FIRST_RETRY_SECONDS, self._policy.retry_max_seconds)

    async def commit(self, outcome: TurnOutcome) -> Committed:
        """Commit ``outcome``, retrying while the store cannot write (module docstring)."""
        backoff = self.backoff()
        while True:
            try:
                return Committed(outcome, await self._db.finish_turn(outcome))
            except StoreUnavailable:
                if outcome.error != GIVEN_UP and self.expired(outcome.item):
                    outcome = self.given_up(outcome.item, outcome.session_id)
                await self.pause(backoff)

    def expired(self, item: InboxItem) -> bool:
        """True once ``item``'s message is too old to answer now."""
        return self._clock.now() - item.message.received_at > self._policy.max_age_seconds

    def given_up(self, item: InboxItem, session_id: str | None) -> TurnOutcome:
        """The failed outcome, with its one notice, of a message given up."""
        log.warning(
            "inbox %s not answered: the store could not write for longer than "
            "recovery.max_age (%g s)",
            item.id,
            self._policy.max_age_seconds,
        )
        return TurnOutcome(
            item=item,
            status="failed",
            processed_at=self._clock.now(),
            session_id=session_id,
            replies=[NOT_ANSWERED],
            error=GIVEN_UP,
        )

    async def pause(self, backoff: Backoff) -> None:
        """Wait for the store to write again, at most the backoff's next pause."""
        await self._db.health.until_writable(backoff.next())


GIVEN_UP = "the store could not write for longer than recovery.max_age"
