"""The delivery ledger: where adapters report how far a reply got.

A push adapter sending a long reply part by part records each part delivered
(``parts_sent``), so a retry, even after a restart, resumes after them. A pull adapter
(the webhook) hands replies out in HTTP responses and records them ``delivered``;
recording each one in its own write would cost a statement per reply on the hot path,
so those ids are queued and written by one flush task, in bulk.

Adapters only ever report here: they never call back into the inbox.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from core.audit.events import NO_AUDIT, AuditSink
from core.audit.receipts import record_receipt
from core.clock import Clock
from core.messages import OutboundMessage
from core.stats import CoreStats
from core.tasks import TaskSet
from core.turn_context import scope

if TYPE_CHECKING:  # only annotations: adapters import the protocol without the store
    from core.store.db import SessionDB

log = logging.getLogger(__name__)


class DeliveryLedger(Protocol):
    """What an adapter reports about the replies it delivers."""

    async def parts_sent(self, outbox_id: int, parts: int) -> None:
        """Record, durably, that the first ``parts`` parts of a long reply went out: a
        retry (even after a restart) resumes after them (``OutboundMessage.parts_sent``)."""
        ...

    def delivered(self, replies: Sequence[OutboundMessage]) -> None:
        """Record, soon and in bulk, that these replies reached the person."""
        ...

    async def preview_shown(self, inbox_id: int, platform_message_id: str) -> None:
        """Record, durably, the platform message a streamed preview of ``inbox_id``'s
        reply is shown in (``core.streaming``): the reply takes it over when it is sent,
        after a restart too, so the chat never keeps a stale preview beside it."""
        ...


class Ledger:
    """The ``DeliveryLedger`` over the SessionDB's outbox; ``close`` flushes what is left."""

    def __init__(
        self, db: SessionDB, clock: Clock, stats: CoreStats, audit: AuditSink = NO_AUDIT
    ) -> None:
        self._db = db
        self._audit = audit
        self._clock = clock
        self._stats = stats
        self._pending: list[int] = []
        self._tasks = TaskSet("delivery-ledger")

    async def parts_sent(self, outbox_id: int, parts: int) -> None:
        await self._db.note_parts_sent(outbox_id, parts)

    async def preview_shown(self, inbox_id: int, platform_message_id: str) -> None:
        await self._db.note_preview(inbox_id, platform_message_id)

    def delivered(self, replies: Sequence[OutboundMessage]) -> None:
        if not replies:
            return
        for reply in replies:
            self._stats.deliveries[reply.platform, "pulled"] += 1
            record_receipt(self._audit, reply, "delivered")
            with scope(reply.inbox_id):
                log.debug("delivered reply %s: platform=%s", reply.id, reply.platform)
        start_flush = not self._pending
        self._pending.extend(r.id for r in replies)
        if start_flush:
            self._tasks.spawn(self._flush(), name="flush")

    async def _flush(self) -> None:
        ids, self._pending = self._pending, []
        # Bookkeeping no one waits on: it rides with the next write.
        await self._db.mark_delivered(ids, self._clock.now(), later=True)

    async def close(self) -> None:
        if self._pending:
            await self._flush()
        await self._tasks.close()
