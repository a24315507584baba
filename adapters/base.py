"""The ``Adapter`` protocol every platform implements.

An adapter normalizes platform events into ``InboundMessage`` values for the core's
``Inbox`` and delivers ``OutboundMessage`` values back. Push adapters (Telegram,
Discord, terminal) send replies themselves; pull adapters (the webhook) hand them
out when a client asks, so ``send`` is never called for them.
"""

from __future__ import annotations

from typing import Protocol

from core.inbox import Inbox
from core.messages import OutboundMessage


class Adapter(Protocol):
    @property
    def name(self) -> str:
        """The platform name used in session keys (``webhook``, ``telegram``...)."""
        ...

    @property
    def push(self) -> bool:
        """True when the gateway must call ``send`` for each reply."""
        ...

    async def start(self, inbox: Inbox) -> None:
        """Begin accepting platform events into ``inbox``."""
        ...

    async def stop(self) -> None:
        """Stop accepting events and release connections."""
        ...

    async def send(self, msg: OutboundMessage) -> str | None:
        """Deliver one reply; return the platform's id for the sent message."""
        ...
