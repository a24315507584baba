"""What an adapter sees of the core: the ``Inbox`` it feeds and reads replies from.

Delivery progress goes to the outbox's ledger (``core.ledger.DeliveryLedger``), not here.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol

from core.access import TurnedAway
from core.approvals.decision import Decided
from core.messages import InboundMessage, OutboundFile, OutboundMessage
from core.store.records import Accepted, ApprovalScope, InboxItem, LastSeen, TurnReplies


class Inbox(Protocol):
    """The core's front door, as adapters use it."""

    @property
    def accepting(self) -> bool:
        """False while the gateway stops: what ``accept`` commits then waits for the next
        start, so an adapter whose sender can retry (an HTTP client) refuses it instead."""
        ...

    async def accept(self, msg: InboundMessage) -> Accepted | TurnedAway:
        """Commit ``msg`` durably and queue it for its session; safe to call twice.

        A message the access policy keeps out is not stored: ``TurnedAway`` says why
        and what, if anything, to tell its sender (the adapter sends that)."""
        ...

    async def admits(self, msg: InboundMessage) -> bool:
        """Whether ``msg`` would be let in (nothing is sent or stored): ask before
        downloading a stranger's files."""
        ...

    def replies(self, item: InboxItem) -> Awaitable[TurnReplies]:
        """``item``'s replies, awaitable once it has been processed.

        While ``item`` is in flight this may be the future its turn resolves, which a
        caller can shield without starting a task; otherwise it is a coroutine.
        """
        ...

    async def replies_after(
        self, *, platform: str, route: str | None, chat_id: str, after: int, limit: int
    ) -> list[OutboundMessage]:
        """Replies for one chat with an outbox id above ``after`` (pull delivery)."""
        ...

    async def last_seen(
        self, platform: str, since: float, until: float, limit: int = 500
    ) -> list[LastSeen]:
        """Per chat of ``platform`` with messages received in [since, until): the newest
        (where a reconnecting adapter resumes reading the platform's history)."""
        ...

    async def sent_file(
        self, file_id: str, *, platform: str, route: str | None
    ) -> tuple[OutboundFile, str] | None:
        """A file sent with a reply to a chat of ``platform`` (and ``route``), and that
        chat's id; None when there is none by that id there (a pull adapter serves it)."""
        ...

    def command_menu(self) -> list[tuple[str, str]]:
        """The chat commands as (name, one-line summary), for a platform's command menu."""
        ...

    async def decide_approval(
        self,
        approval_id: int,
        *,
        platform: str,
        route: str | None,
        user_id: str,
        approve: bool,
        scope: ApprovalScope = "once",
    ) -> Decided:
        """Decide a tool call waiting for approval in a chat of ``platform`` (and
        ``route``), as ``user_id``; the turn waiting for it goes on."""
        ...
