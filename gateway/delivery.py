"""Push delivery: hands committed replies to the adapter that owns the chat.

Replies are already durable in the outbox when they get here. A reply is marked
delivered only after its adapter's ``send`` returned, so once marked nothing is sent
twice. A reply that could not be sent now stays pending (later replies of the run wait
behind it, keeping order) and is retried from the outbox with backoff, and again at the
next start. A reply that can never be delivered (``Undeliverable``: the person blocked
the bot) is marked failed and never retried.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from adapters.base import Adapter
from core.clock import Clock
from core.errors import ChatgateError, Undeliverable
from core.messages import OutboundMessage
from core.store.db import SessionDB
from core.tasks import TaskSet

log = logging.getLogger(__name__)

RETRY_FIRST_SECONDS = 1.0
RETRY_MAX_SECONDS = 60.0


class PushDelivery:
    def __init__(self, db: SessionDB, adapters: Mapping[str, Adapter], clock: Clock) -> None:
        self._db = db
        self._adapters = {name: a for name, a in adapters.items() if a.push}
        self._clock = clock
        self._retrying: set[str] = set()
        self._tasks = TaskSet("delivery")

    async def close(self) -> None:
        await self._tasks.close()

    async def deliver(self, replies: list[OutboundMessage]) -> bool:
        """Send ``replies`` in order; False when one must be retried later."""
        sent: list[int] = []
        platform_ids: list[str | None] = []
        complete = True
        for reply in replies:
            adapter = self._adapters.get(reply.platform)
            if adapter is None:
                continue
            try:
                platform_ids.append(await adapter.send(reply))
            except Undeliverable as exc:
                log.warning(
                    "reply %s to %s can never be delivered: %s", reply.id, reply.platform, exc
                )
                await self._db.mark_failed([reply.id], str(exc))
                continue
            except (ChatgateError, OSError) as exc:
                log.warning("reply %s to %s not sent yet: %s", reply.id, reply.platform, exc)
                self._retry_later(reply.platform)
                complete = False
                break  # keep order: later replies wait for this one
            sent.append(reply.id)
        if sent:
            await self._db.mark_delivered(sent, self._clock.now(), platform_ids)
        return complete

    async def resend_pending(self) -> int:
        """Send replies committed before a restart but never delivered."""
        count = 0
        for platform in self._adapters:
            pending = await self._db.pending_replies(platform)
            await self.deliver(pending)
            count += len(pending)
        return count

    def _retry_later(self, platform: str) -> None:
        if platform not in self._retrying:
            self._retrying.add(platform)
            self._tasks.spawn(self._retry(platform), name=f"retry:{platform}")

    async def _retry(self, platform: str) -> None:
        """Resend ``platform``'s pending replies from the outbox, backing off, until done."""
        pause = RETRY_FIRST_SECONDS
        try:
            while True:
                await asyncio.sleep(pause)  # backoff between attempts
                pending = await self._db.pending_replies(platform)
                if not pending or await self.deliver(pending):
                    return
                pause = min(pause * 2, RETRY_MAX_SECONDS)
        finally:
            self._retrying.discard(platform)
