"""Inbox operations: every inbound message is committed here before it is acknowledged."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from core.messages import Attachment, InboundMessage
from core.store.records import Accepted, InboxItem
from core.store.schema import inbox
from core.store.text import scrub_row


def insert_ignoring_duplicates(conn: AsyncConnection, table: Any) -> Insert:
    """An INSERT that skips rows violating a unique constraint, for this dialect."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()


async def accept(conn: AsyncConnection, msg: InboundMessage, key: str) -> Accepted:
    """Insert ``msg`` unless its (platform, dedup_key) is known; return the row either way."""
    stmt = (
        insert_ignoring_duplicates(conn, inbox)
        .values(scrub_row(_row(msg, key)))
        .returning(inbox.c.id)
    )
    new_id = (await conn.execute(stmt)).scalar_one_or_none()
    if new_id is not None:
        return Accepted(InboxItem(id=new_id, session_key=key, message=msg), created=True)
    ident = scrub_row({"platform": msg.platform, "dedup_key": msg.dedup_key})
    existing = (
        await conn.execute(
            select(inbox).where(
                inbox.c.platform == ident["platform"], inbox.c.dedup_key == ident["dedup_key"]
            )
        )
    ).one()
    return Accepted(item_from_row(existing), created=False)


async def pending(conn: AsyncConnection) -> list[InboxItem]:
    """Messages accepted but not yet processed, oldest first (for recovery at start)."""
    rows = await conn.execute(select(inbox).where(inbox.c.status == "pending").order_by(inbox.c.id))
    return [item_from_row(r) for r in rows]


async def get(conn: AsyncConnection, inbox_id: int) -> InboxItem | None:
    row = (await conn.execute(select(inbox).where(inbox.c.id == inbox_id))).one_or_none()
    return item_from_row(row) if row is not None else None


def _row(msg: InboundMessage, key: str) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "addressed": msg.addressed,
        "is_group": msg.is_group,
        "reply_to": msg.reply_to,
    }
    if msg.attachments:
        payload["attachments"] = [
            {"path": a.path, "mime_type": a.mime_type, "name": a.name, "size": a.size}
            for a in msg.attachments
        ]
    return {
        "platform": msg.platform,
        "dedup_key": msg.dedup_key,
        "platform_message_id": msg.platform_message_id,
        "route": msg.route,
        "chat_id": msg.chat_id,
        "thread_id": msg.thread_id,
        "user_id": msg.user_id,
        "user_name": msg.user_name,
        "text": msg.text,
        "payload": payload,
        "session_key": key,
        "status": "pending",
        "received_at": msg.received_at,
    }


def item_from_row(row: Row[Any]) -> InboxItem:
    payload: dict[str, Any] = row.payload or {}
    attachments = tuple(Attachment(**a) for a in payload.get("attachments", ()))
    msg = InboundMessage(
        platform=row.platform,
        chat_id=row.chat_id,
        user_id=row.user_id,
        text=row.text,
        platform_message_id=row.platform_message_id,
        dedup_key=row.dedup_key,
        received_at=row.received_at,
        thread_id=row.thread_id,
        user_name=row.user_name,
        route=row.route,
        reply_to=payload.get("reply_to"),
        addressed=bool(payload.get("addressed", True)),
        is_group=bool(payload.get("is_group", False)),
        attachments=attachments,
    )
    return InboxItem(
        id=row.id,
        session_key=row.session_key,
        message=msg,
        status=row.status,
        session_id=row.session_id,
    )
