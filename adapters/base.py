"""The ``Adapter`` protocol every platform implements.

An adapter normalizes platform events into ``InboundMessage`` values for the core's
``Inbox`` and delivers ``OutboundMessage`` values back. Push adapters (Telegram,
Discord, terminal) send replies themselves and report progress to the
``DeliveryLedger``; pull adapters (the webhook) hand replies out when a client asks
(so ``send`` is never called for them) and record what they handed out there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # only annotations: the CLI imports this without the HTTP stack or the store
    from fastapi import FastAPI

    from core.inbox import Inbox
    from core.ledger import DeliveryLedger
    from core.messages import OutboundMessage
    from core.streaming import Previews


class Adapter(Protocol):
    @property
    def name(self) -> str:
        """The platform name used in session keys (``webhook``, ``telegram``...)."""
        ...

    @property
    def push(self) -> bool:
        """True when the gateway must call ``send`` for each reply."""
        ...

    @property
    def healthy(self) -> bool:
        """Connected and receiving (``/readyz`` answers 503 naming it while False)."""
        ...

    @property
    def previews(self) -> Previews | None:
        """Shows replies while they are generated (``core.streaming``); None: this
        platform (or its settings) does not stream, replies arrive whole."""
        ...

    def install(self, app: FastAPI) -> None:
        """Add the adapter's HTTP routes to the gateway's app (most add none)."""
        ...

    async def start(self, inbox: Inbox, ledger: DeliveryLedger) -> None:
        """Begin accepting platform events into ``inbox``."""
        ...

    async def stop(self) -> None:
        """Stop accepting events and release connections."""
        ...

    async def send(self, msg: OutboundMessage) -> str | None:
        """Deliver one reply; return the platform's id for the sent message."""
        ...
