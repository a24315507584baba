"""Outbox operations: replies wait here until the adapter owning the chat delivers them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from core.messages import ChatTarget, OutboundMessage, ReplyAction
from core.store.records import InboxItem
from core.store.schema import outbox
from core.store.text import scrub_row
from core.store.tx import Tx, insert_sql

_COLUMNS = (
    "inbox_id",
    "session_id",
    "platform",
    "route",
    "chat_id",
    "thread_id",
    "reply_to",
    "text",
    "status",
    "attempts",
    "created_at",
    "actions",
)
_ADD = insert_sql("outbox", _COLUMNS, " RETURNING id")
_DELIVERED_ONE = (
    "UPDATE outbox SET status = 'delivered', delivered_at = :at, "
    "platform_message_id = :platform_message_id WHERE id = :id"
)
_PARTS = "UPDATE outbox SET parts_sent = :parts WHERE id = :id AND parts_sent < :parts"
_DELIVERED = (
    "UPDATE outbox SET status = 'delivered', delivered_at = :at "
    "WHERE id = :id AND status <> 'delivered'"
)


def add_replies(
    tx: Tx, item: InboxItem, session_id: str | None, texts: Sequence[str], created_at: float
) -> list[OutboundMessage]:
    """Queue ``texts`` as replies to ``item``'s chat; return them with their outbox ids."""
    msg = item.message
    return _queue(
        tx,
        ChatTarget.of(msg),
        texts,
        created_at,
        session_id=session_id,
        inbox_id=item.id,
        reply_to=msg.platform_message_id,
    )


def add_notices(
    tx: Tx,
    target: ChatTarget,
    session_id: str | None,
    texts: Sequence[str],
    created_at: float,
    *,
    reply_to: str | None = None,
) -> list[OutboundMessage]:
    """Queue ``texts`` for ``target`` without an inbound message (review notes, cron output)."""
    return _queue(tx, target, texts, created_at, session_id=session_id, reply_to=reply_to)


def add_prompt(
    tx: Tx,
    item: InboxItem,
    session_id: str,
    text: str,
    actions: Sequence[ReplyAction],
    created_at: float,
) -> OutboundMessage:
    """Queue one reply to ``item``'s chat with buttons under it (an approval's choices)."""
    msg = item.message
    (prompt,) = _queue(
        tx,
        ChatTarget.of(msg),
        [text],
        created_at,
        session_id=session_id,
        inbox_id=item.id,
        reply_to=msg.platform_message_id,
        actions=tuple(actions),
    )
    return prompt


def _queue(
    tx: Tx,
    target: ChatTarget,
    texts: Sequence[str],
    created_at: float,
    *,
    session_id: str | None,
    inbox_id: int | None = None,
    reply_to: str | None = None,
    actions: tuple[ReplyAction, ...] = (),
) -> list[OutboundMessage]:
    encoded = json.dumps([[a.label, a.command] for a in actions]) if actions else None
    replies = []
    for text in texts:
        row = scrub_row(
            {
                "inbox_id": inbox_id,
                "session_id": session_id,
                "platform": target.platform,
                "route": target.route,
                "chat_id": target.chat_id,
                "thread_id": target.thread_id,
                "reply_to": reply_to,
                "text": text,
                "status": "pending",
                "attempts": 0,
                "created_at": created_at,
                "actions": encoded,
            }
        )
        replies.append(
            OutboundMessage(
                id=tx.scalar(_ADD, row),
                platform=target.platform,
                chat_id=target.chat_id,
                text=row["text"],
                session_id=session_id,
                thread_id=target.thread_id,
                reply_to=reply_to,
                inbox_id=inbox_id,
                created_at=created_at,
                actions=actions,
            )
        )
    return replies


_FAILED = (
    "UPDATE outbox SET status = 'failed', error = :error, attempts = attempts + 1 "
    "WHERE id = :id AND status = 'pending'"
)


def note_parts_sent(tx: Tx, outbox_id: int, parts: int) -> None:
    """Record that the first ``parts`` parts of a long reply were delivered."""
    tx.execute(_PARTS, {"id": outbox_id, "parts": parts})


def mark_failed(tx: Tx, ids: Sequence[int], error: str) -> None:
    """Give up on replies that can never be delivered (they are kept, marked failed)."""
    tx.executemany(_FAILED, [{"id": i, "error": error[:2000]} for i in ids])


def mark_delivered(
    tx: Tx, ids: Sequence[int], at: float, platform_ids: Sequence[str | None] = ()
) -> None:
    """Record that the adapter delivered these replies."""
    if platform_ids:
        tx.executemany(
            _DELIVERED_ONE,
            [
                {"id": i, "at": at, "platform_message_id": p}
                for i, p in zip(ids, platform_ids, strict=True)
            ],
        )
    elif ids:
        tx.executemany(_DELIVERED, [{"id": i, "at": at} for i in ids])


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


async def pending_for(
    conn: AsyncConnection, platform: str, limit: int, after: int = 0
) -> list[OutboundMessage]:
    """Undelivered replies of ``platform`` with an outbox id above ``after``, oldest first."""
    stmt = (
        select(outbox)
        .where(outbox.c.status == "pending", outbox.c.platform == platform, outbox.c.id > after)
        .order_by(outbox.c.id)
        .limit(limit)
    )
    return [_from_row(r) for r in await conn.execute(stmt)]


async def count_pending(conn: AsyncConnection) -> int:
    """How many replies, of every platform, are not delivered yet."""
    stmt = select(func.count()).select_from(outbox).where(outbox.c.status == "pending")
    return int((await conn.execute(stmt)).scalar_one())


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
        parts_sent=row.parts_sent,
        actions=_actions(row.actions),
    )


def _actions(stored: Any) -> tuple[ReplyAction, ...]:
    """The ``actions`` column (JSON ``[[label, command], ...]``) as reply buttons."""
    pairs = json.loads(stored) if isinstance(stored, str) else stored
    return tuple(ReplyAction(str(label), str(command)) for label, command in pairs or ())
