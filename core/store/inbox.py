"""Inbox operations: every inbound message is committed here before it is acknowledged."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import desc, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from core.messages import Attachment, InboundMessage
from core.store.records import Accepted, InboxItem, LastSeen
from core.store.schema import inbox
from core.store.text import scrub_row
from core.store.tx import Tx, insert_sql

_COLUMNS = (
    "platform",
    "dedup_key",
    "platform_message_id",
    "route",
    "chat_id",
    "thread_id",
    "user_id",
    "user_name",
    "text",
    "payload",
    "session_key",
    "status",
    "received_at",
)
_ACCEPT = insert_sql("inbox", _COLUMNS, " ON CONFLICT DO NOTHING RETURNING id")
_BY_DEDUP = "SELECT * FROM inbox WHERE platform = :platform AND dedup_key = :dedup_key"
_TAKE = "UPDATE inbox SET attempts = attempts + 1 WHERE id = :id AND status = 'pending'"
_RELEASE = (
    "UPDATE inbox SET attempts = attempts - 1 "
    "WHERE id = :id AND status = 'pending' AND attempts > 0"
)


def accept(tx: Tx, msg: InboundMessage, key: str) -> Accepted:
    """Insert ``msg`` unless its (platform, dedup_key) is known; return the row either way."""
    row = scrub_row(_row(msg, key))
    new_id = tx.scalar(_ACCEPT, row)
    if new_id is not None:
        return Accepted(InboxItem(id=new_id, session_key=key, message=msg), created=True)
    existing = tx.fetch(_BY_DEDUP, {"platform": row["platform"], "dedup_key": row["dedup_key"]})
    return Accepted(item_from_row(existing[0]), created=False)


_PREVIEW = "UPDATE inbox SET preview_id = :preview_id WHERE id = :id"


def set_preview(tx: Tx, inbox_id: int, preview_id: str) -> None:
    """Record the platform message showing a streamed preview of ``inbox_id``'s reply."""
    tx.execute(_PREVIEW, {"id": inbox_id, "preview_id": preview_id})


def take(tx: Tx, inbox_id: int) -> None:
    """Count a start of ``inbox_id``'s turn; a crash before it finishes leaves the count."""
    tx.execute(_TAKE, {"id": inbox_id})


def release(tx: Tx, inbox_ids: Sequence[int]) -> None:
    """Give back a start of each of ``inbox_ids`` (cut short by a stop, not a crash)."""
    tx.executemany(_RELEASE, [{"id": i} for i in inbox_ids])


async def pending(conn: AsyncConnection, up_to: int | None = None) -> list[InboxItem]:
    """Messages accepted but not yet processed, oldest first (for recovery at start).

    ``up_to`` leaves out messages accepted after that id: adapters already running
    dispatch their own messages, which must not be dispatched twice.
    """
    query = select(inbox).where(inbox.c.status == "pending")
    if up_to is not None:
        query = query.where(inbox.c.id <= up_to)
    rows = await conn.execute(query.order_by(inbox.c.id))
    return [item_from_row(r._mapping) for r in rows]


async def newest_id(conn: AsyncConnection) -> int:
    """The id of the newest inbox row (0 when empty): cheap, by primary key."""
    found = (await conn.execute(select(inbox.c.id).order_by(inbox.c.id.desc()).limit(1))).scalar()
    return int(found or 0)


async def last_seen(
    conn: AsyncConnection, platform: str, since: float, until: float, limit: int = 500
) -> list[LastSeen]:
    """Per chat and thread of ``platform`` with a message received in [since, until):
    the newest one; the ``limit`` most recently active chats."""
    newest = (
        select(func.max(inbox.c.id).label("newest"))
        .where(
            inbox.c.platform == platform,
            inbox.c.received_at >= since,
            inbox.c.received_at < until,
        )
        .group_by(inbox.c.chat_id, inbox.c.thread_id)
        .order_by(desc("newest"))
        .limit(limit)
        .subquery()
    )
    query = select(
        inbox.c.chat_id, inbox.c.thread_id, inbox.c.platform_message_id, inbox.c.received_at
    ).where(inbox.c.id.in_(select(newest.c.newest)))
    rows = await conn.execute(query.order_by(inbox.c.id))
    return [LastSeen(r.chat_id, r.thread_id, r.platform_message_id, r.received_at) for r in rows]


async def get(conn: AsyncConnection, inbox_id: int) -> InboxItem | None:
    row = (await conn.execute(select(inbox).where(inbox.c.id == inbox_id))).one_or_none()
    return item_from_row(row._mapping) if row is not None else None


def _row(msg: InboundMessage, key: str) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "addressed": msg.addressed,
        "is_group": msg.is_group,
        "reply_to": msg.reply_to,
    }
    if msg.attachments:
        payload["attachments"] = [
            {
                "path": a.path,
                "mime_type": a.mime_type,
                "name": a.name,
                "size": a.size,
                "kind": a.kind,
            }
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
        "payload": json.dumps(payload),
        "session_key": key,
        "status": "pending",
        "received_at": msg.received_at,
    }


def item_from_row(row: Mapping[Any, Any]) -> InboxItem:
    """An inbox row (from SQLAlchemy or a raw ``Tx.fetch``) as an ``InboxItem``."""
    raw = row["payload"]
    payload: dict[str, Any] = (json.loads(raw) if isinstance(raw, str) else raw) or {}
    attachments = tuple(Attachment(**a) for a in payload.get("attachments", ()))
    msg = InboundMessage(
        platform=row["platform"],
        chat_id=row["chat_id"],
        user_id=row["user_id"],
        text=row["text"],
        platform_message_id=row["platform_message_id"],
        dedup_key=row["dedup_key"],
        received_at=row["received_at"],
        thread_id=row["thread_id"],
        user_name=row["user_name"],
        route=row["route"],
        reply_to=payload.get("reply_to"),
        addressed=bool(payload.get("addressed", True)),
        is_group=bool(payload.get("is_group", False)),
        attachments=attachments,
    )
    return InboxItem(
        id=row["id"],
        session_key=row["session_key"],
        message=msg,
        status=row["status"],
        session_id=row["session_id"],
        attempts=row["attempts"] or 0,
        preview_id=row.get("preview_id"),
    )
