"""A reply's delivery receipts in the audit ledger, one event each (``delivery_<receipt>``):
``queued`` (committed to the outbox),
``sent`` (a push adapter's ``send`` returned), ``delivered`` (a pull client received it),
``failed`` (it can never be delivered) and ``unknown`` (sending raised; it is retried, and
whether the platform showed it is not known)."""

from __future__ import annotations

from typing import Literal

from core.audit.events import AuditSink, Who
from core.messages import OutboundMessage

Receipt = Literal["queued", "sent", "delivered", "failed", "unknown"]


def record_receipt(
    audit: AuditSink, reply: OutboundMessage, receipt: Receipt, platform_id: str | None = None
) -> None:
    """Record ``reply``'s ``receipt`` under its turn (or, for a notice, its chat)."""
    detail: dict[str, object] = {"outbox_id": reply.id}
    if platform_id is not None:
        detail["platform_message_id"] = platform_id
    chat = ":".join(p for p in (reply.platform, reply.chat_id, reply.thread_id) if p)
    who = Who(platform=reply.platform, chat_key=chat, session_id=reply.session_id)
    audit.record(f"delivery_{receipt}", detail, who=who, turn_id=reply.inbox_id)
