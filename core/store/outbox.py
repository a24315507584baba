"""Outbox operations: replies wait here until the adapter owning the chat delivers them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from core.messages import OutboundMessage
from core.store.records import InboxItem
from core.store.schema import outbox
from core.store.text import scrub_row


async def add_replies(
    conn: AsyncConnection,
    item: InboxItem,
    session_id: str | None,
    texts: Sequence[str],
    created_at: float,
) -> list[OutboundMessage]:
    """Queue ``texts`` as replies to ``item``'s chat; return them with their outbox ids."""
    if not texts:
        return []
    msg = item.message
    base = {
        "inbox_id": item.id,
        "session_id": session_id,
        "platform": msg.platform,
        "route": msg.route,
        "chat_id": msg.chat_id,
        "thread_id": msg.thread_id,
        "reply_to": msg.platform_message_id,
        "status": "pending",
        "created_at": created_at,
    }
    rows = [scrub_row({**base, "text": t}) for t in texts]
    result = await conn.execute(
        outbox.insert().returning(outbox.c.id, sort_by_parameter_order=True), rows
    )
    ids = [r.id for r in result]
    return [
        OutboundMessage(
            id=i,
            platform=msg.platform,
            chat_id=msg.chat_id,
            text=row["text"],
            session_id=session_id,
            thread_id=msg.thread_id,
            reply_to=msg.platform_message_id,
            inbox_id=item.id,
            created_at=created_at,
        )
        for i, row in zip(ids, rows, strict=True)
    ]


async def for_inbox(conn: AsyncConnection, inbox_id: int) -> list[OutboundMessage]:
    rows = await conn.execute(
        select(outbox).where(outbox.c.inbox_id == inbox_id).order_by(outbox.c.id)
    )
    return [_from_row(r) for r in rows]


async def for_chat_after(
    conn: AsyncConnection,
    *,
    platform: str,
    route: str | None,
    chat_id: str,
    after: int,
    limit: int,
) -> list[OutboundMessage]:
    """Replies for one chat with an outbox id above ``after``, oldest first."""
    stmt = (
        select(outbox)
        .where(
            outbox.c.platform == platform,
            outbox.c.chat_id == chat_id,
            outbox.c.route == route if route is not None else outbox.c.route.is_(None),
            outbox.c.id > after,
        )
        .order_by(outbox.c.id)
        .limit(limit)
    )
    return [_from_row(r) for r in await conn.execute(stmt)]


async def pending_for(conn: AsyncConnection, platform: str, limit: int) -> list[OutboundMessage]:
    stmt = (
        select(outbox)
        .where(outbox.c.status == "pending", outbox.c.platform == platform)
        .order_by(outbox.c.id)
        .limit(limit)
    )
    return [_from_row(r) for r in await conn.execute(stmt)]


async def mark_delivered(
    conn: AsyncConnection, ids: Sequence[int], at: float, platform_ids: Sequence[str | None] = ()
) -> None:
    """Record that the adapter delivered these replies."""
    if not ids:
        return
    if platform_ids:
        for outbox_id, pid in zip(ids, platform_ids, strict=True):
            await conn.execute(
                update(outbox)
                .where(outbox.c.id == outbox_id)
                .values(status="delivered", delivered_at=at, platform_message_id=pid)
            )
        return
    await conn.execute(
        update(outbox)
        .where(outbox.c.id.in_(list(ids)), outbox.c.status != "delivered")
        .values(status="delivered", delivered_at=at)
    )


def _from_row(row: Row[Any]) -> OutboundMessage:
    return OutboundMessage(
        id=row.id,
        platform=row.platform,
        chat_id=row.chat_id,
        text=row.text,
        session_id=row.session_id,
        thread_id=row.thread_id,
        reply_to=row.reply_to,
        inbox_id=row.inbox_id,
        created_at=row.created_at,
    )
