"""Push delivery: hands committed replies to the adapter that owns the chat.

Replies are already durable in the outbox when they get here. A reply is marked
delivered only after its adapter's ``send`` returned; what could not be sent stays
pending and is retried at the next start, so nothing is lost and, once marked,
nothing is sent twice.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from adapters.base import Adapter
from core.clock import Clock
from core.errors import ChatgateError
from core.messages import OutboundMessage
from core.store.db import SessionDB

log = logging.getLogger(__name__)


class PushDelivery:
    def __init__(self, db: SessionDB, adapters: Mapping[str, Adapter], clock: Clock) -> None:
        self._db = db
        self._adapters = {name: a for name, a in adapters.items() if a.push}
        self._clock = clock

    async def deliver(self, replies: list[OutboundMessage]) -> None:
        sent: list[int] = []
        platform_ids: list[str | None] = []
        for reply in replies:
            adapter = self._adapters.get(reply.platform)
            if adapter is None:
                continue
            try:
                platform_ids.append(await adapter.send(reply))
            except (ChatgateError, OSError) as exc:
                log.warning("reply %s to %s not sent yet: %s", reply.id, reply.platform, exc)
                break  # keep order: later replies wait for this one
            sent.append(reply.id)
        if sent:
            await self._db.mark_delivered(sent, self._clock.now(), platform_ids)

    async def resend_pending(self) -> int:
        """Send replies committed before a restart but never delivered."""
        count = 0
        for platform in self._adapters:
            pending = await self._db.pending_replies(platform)
            await self.deliver(pending)
            count += len(pending)
        return count
