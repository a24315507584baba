"""Sending a long reply part by part, each part at most once.

A reply longer than one platform message goes out as several. When one part fails,
the outbox retries the whole reply later; the parts already delivered are skipped,
remembered in memory and, through the ``DeliveryLedger``, in the outbox row, so a
restart in between does not send them again either.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from core.errors import Undeliverable
from core.messages import OutboundMessage

log = logging.getLogger(__name__)

Part = TypeVar("Part")
Record = Callable[[int, int], Awaitable[None]]


class PartProgress:
    """See the module docstring."""

    def __init__(self) -> None:
        self._sent: dict[int, int] = {}
        self.record: Record | None = None  # set once the adapter has its ledger

    async def send(
        self,
        msg: OutboundMessage,
        parts: Sequence[Part],
        send_one: Callable[[int, Part], Awaitable[str]],
    ) -> str | None:
        """Send ``parts`` not sent before, in order; return the last platform id."""
        done = max(self._sent.get(msg.id, 0), msg.parts_sent)
        last: str | None = None
        for index, part in enumerate(parts):
            if index < done:
                continue  # delivered before a failure further on: never twice
            try:
                last = await send_one(index, part)
            except Undeliverable:
                self._sent.pop(msg.id, None)  # never retried: nothing to remember
                raise
            self._sent[msg.id] = index + 1
            if index + 1 < len(parts):
                await self._record(msg.id, index + 1)
        self._sent.pop(msg.id, None)
        return last

    async def _record(self, outbox_id: int, parts: int) -> None:
        if self.record is None:
            return
        try:
            await self.record(outbox_id, parts)
        except Exception:  # memory still knows; only a restart would resend the part
            log.exception("reply %s: could not record %d parts sent", outbox_id, parts)
