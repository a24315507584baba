"""Replies on their way out: committed in the outbox, then pushed or pulled.

Every reply is durable in the outbox before anything tries to send it. ``publish``
hands a turn's committed replies to push delivery (the adapters that send them
themselves); pull adapters' clients read them from the outbox instead. ``notify``
writes and publishes a message nobody asked for (a review's note, a cron job's
output). Adapters report progress to the ``ledger``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.audit.events import NO_AUDIT, AuditSink
from core.audit.receipts import record_receipt
from core.clock import Clock
from core.ledger import Ledger
from core.messages import ChatTarget, OutboundMessage
from core.push_delivery import PushDelivery, ReplySender
from core.stats import CoreStats
from core.store.db import SessionDB


class Outbox:
    """See the module docstring. ``close`` stops retries and flushes the ledger."""

    def __init__(
        self,
        db: SessionDB,
        clock: Clock,
        senders: Mapping[str, ReplySender],
        stats: CoreStats,
        audit: AuditSink = NO_AUDIT,
    ) -> None:
        self._db = db
        self._clock = clock
        self._audit = audit
        self._push = PushDelivery(db, senders, clock, stats, audit)
        self.ledger = Ledger(db, clock, stats, audit)

    async def publish(self, replies: list[OutboundMessage]) -> None:
        """Send freshly committed ``replies`` through the adapters that push them."""
        for reply in replies:
            record_receipt(self._audit, reply, "queued")
        if replies:
            await self._push.deliver(replies)

    async def notify(
        self, target: ChatTarget, texts: Sequence[str], *, session_id: str | None = None
    ) -> list[OutboundMessage]:
        """Send ``texts`` to a chat unprompted (a review's note, a cron job's output)."""
        replies = await self._db.add_notices(target, texts, self._clock.now(), session_id)
        await self.publish(replies)
        return replies

    async def resend_pending(self) -> int:
        """Send replies committed before a restart but never delivered."""
        return await self._push.resend_pending()

    async def close(self) -> None:
        await self._push.close()
        await self.ledger.close()
