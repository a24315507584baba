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
import time
from collections.abc import Mapping
from typing import Protocol

from core.audit.events import NO_AUDIT, AuditSink
from core.audit.receipts import record_receipt
from core.clock import Clock
from core.errors import ChatgateError, Undeliverable
from core.messages import OutboundMessage
from core.retry import Backoff
from core.stats import CoreStats
from core.store.db import SessionDB
from core.tasks import TaskSet
from core.turn_context import scope

log = logging.getLogger(__name__)

RETRY_FIRST_SECONDS = 1.0
RETRY_MAX_SECONDS = 60.0


PAGE = 100


class ReplySender(Protocol):
    """What push delivery needs of an adapter (``adapters.base.Adapter`` is one)."""

    @property
    def push(self) -> bool:
        """True when replies must be sent with ``send``; False when clients pull them."""
        ...

    async def send(self, msg: OutboundMessage) -> str | None:
        """Deliver one reply; return the platform's id for the sent message."""
        ...


class PushDelivery:
    """One sender per platform at a time, always in outbox order (see module docstring)."""

    def __init__(
        self,
        db: SessionDB,
        adapters: Mapping[str, ReplySender],
        clock: Clock,
        stats: CoreStats,
        audit: AuditSink = NO_AUDIT,
    ) -> None:
        self._db = db
        self._stats = stats
        self._audit = audit
        self._adapters = {name: a for name, a in adapters.items() if a.push}
        self._clock = clock
        self._locks = {name: asyncio.Lock() for name in self._adapters}
        self._retrying: set[str] = set()
        self._tasks = TaskSet("delivery")

    async def close(self) -> None:
        await self._tasks.close()

    async def deliver(self, replies: list[OutboundMessage]) -> bool:
        """Send fresh ``replies``; False when some wait in the outbox for a retry."""
        complete = True
        for platform in {r.platform for r in replies if r.platform in self._adapters}:
            mine = [r for r in replies if r.platform == platform]
            async with self._locks[platform]:
                if platform in self._retrying:
                    # Older replies wait in the outbox: the retry sends these after them.
                    complete = False
                elif not await self._send(platform, mine):
                    complete = False
        return complete

    async def resend_pending(self) -> int:
        """Send replies committed before a restart but never delivered (all of them)."""
        count = 0
        for platform in self._adapters:
            async with self._locks[platform]:
                count += await self._drain(platform)
        return count

    async def _drain(self, platform: str) -> int:
        """Send the platform's pending replies page by page; schedule a retry if one fails."""
        count, after = 0, 0
        while True:
            page = await self._db.pending_replies(platform, PAGE, after)
            if not page:
                return count
            count += len(page)
            await self._send(platform, page)
            after = page[-1].id
            if len(page) < PAGE:
                return count

    async def _send(self, platform: str, replies: list[OutboundMessage]) -> bool:
        """Send in order; a chat whose reply fails keeps its later replies back."""
        adapter = self._adapters[platform]
        sent: list[int] = []
        platform_ids: list[str | None] = []
        held: set[tuple[str, str | None]] = set()
        for reply in replies:
            chat = (reply.chat_id, reply.thread_id)
            if chat in held:
                continue  # keep this chat's order: it waits for the failed one
            started = time.perf_counter()
            try:
                with scope(reply.inbox_id):  # a retry's lines name the turn they finish
                    platform_ids.append(await adapter.send(reply))
            except Undeliverable as exc:
                log.warning("reply %s to %s can never be delivered: %s", reply.id, platform, exc)
                self._stats.deliveries[platform, "undeliverable"] += 1
                record_receipt(self._audit, reply, "failed")
                await self._db.mark_failed([reply.id], str(exc))
                continue
            except (ChatgateError, OSError) as exc:
                log.warning("reply %s to %s not sent yet: %s", reply.id, platform, exc)
                self._stats.deliveries[platform, "retry"] += 1
                record_receipt(self._audit, reply, "unknown")
                held.add(chat)
                continue
            except Exception:  # an adapter bug must not lose the marks of replies sent
                log.exception("reply %s to %s failed unexpectedly; retrying", reply.id, platform)
                self._stats.deliveries[platform, "retry"] += 1
                record_receipt(self._audit, reply, "unknown")
                held.add(chat)
                continue
            self._sent(platform, reply, time.perf_counter() - started)
            record_receipt(self._audit, reply, "sent", platform_ids[-1])
            sent.append(reply.id)
        if sent:
            await self._db.mark_delivered(sent, self._clock.now(), platform_ids)
        if held:
            self._retry_later(platform)
        return not held

    def _sent(self, platform: str, reply: OutboundMessage, seconds: float) -> None:
        self._stats.deliveries[platform, "sent"] += 1
        self._stats.delivery_seconds.observe((platform,), seconds)
        with scope(reply.inbox_id):
            log.debug("delivered reply %s: platform=%s seconds=%.3f", reply.id, platform, seconds)

    def _retry_later(self, platform: str) -> None:
        if platform not in self._retrying:
            self._retrying.add(platform)
            self._tasks.spawn(self._retry(platform), name=f"retry:{platform}")

    async def _retry(self, platform: str) -> None:
        """Resend ``platform``'s pending replies from the outbox, backing off, until none
        is left (replies committed meanwhile are left to this loop, in order)."""
        backoff = Backoff(RETRY_FIRST_SECONDS, RETRY_MAX_SECONDS)
        pause = backoff.next()
        try:
            while True:
                await asyncio.sleep(pause)  # backoff between attempts
                async with self._locks[platform]:
                    pending = await self._db.pending_replies(platform, PAGE)
                    if not pending:
                        self._retrying.discard(platform)
                        return
                    delivered = await self._send(platform, pending)
                if delivered:  # look again at once: more may have been committed meanwhile
                    backoff.reset()
                    pause = 0.0
                else:
                    pause = backoff.next()
        finally:
            self._retrying.discard(platform)
