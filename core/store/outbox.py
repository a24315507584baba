"""Outbox operations: replies wait here until the adapter owning the chat delivers them."""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, func, literal, select
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from core.media.refs import MediaRef
from core.messages import ChatTarget, OutboundFile, OutboundMessage, ReplyAction
from core.store.records import InboxItem
from core.store.schema import messages, outbox, outbox_files
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
    "preview_id",
    "file_count",
    "message_id",
)
_ADD = insert_sql("outbox", _COLUMNS, " RETURNING id")
_FILE_COLUMNS = (
    "id",
    "outbox_id",
    "position",
    "sha256",
    "mime",
    "kind",
    "name",
    "size",
    "caption",
)
_ADD_FILE = insert_sql("outbox_files", _FILE_COLUMNS)
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
    tx: Tx,
    item: InboxItem,
    session_id: str | None,
    texts: Sequence[str],
    created_at: float,
    *,
    preview_id: str | None = None,
    files: Sequence[MediaRef] = (),
    message_ids: Sequence[int | None] = (),
) -> list[OutboundMessage]:
    """Queue ``texts`` as replies to ``item``'s chat; return them with their outbox ids.

    The last reply takes over the streamed preview ``preview_id`` and carries ``files``
    (with no text at all, one reply of no text carries them). ``message_ids``, beside
    ``texts``: the message written in the same transaction whose content is that text
    word for word; such a reply stores no text of its own, readers take the message's."""
    msg = item.message
    if files and not texts:
        texts = [""]
    return _queue(
        tx,
        ChatTarget.of(msg),
        texts,
        created_at,
        session_id=session_id,
        inbox_id=item.id,
        reply_to=msg.platform_message_id,
        preview_id=preview_id,
        files=tuple(files),
        message_ids=tuple(message_ids),
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
    preview_id: str | None = None,
    files: tuple[MediaRef, ...] = (),
    message_ids: tuple[int | None, ...] = (),
) -> list[OutboundMessage]:
    """Queue one reply per text; the last one gets ``preview_id`` and ``files``."""
    encoded = json.dumps([[a.label, a.command] for a in actions]) if actions else None
    replies = []
    for index, text in enumerate(texts):
        last = index == len(texts) - 1
        message_id = message_ids[index] if index < len(message_ids) else None
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
                "preview_id": preview_id if last else None,
                "file_count": len(files) if last else 0,
                "message_id": message_id,
            }
        )
        said = row["text"]  # scrubbed as the message's content was
        outbox_id = tx.scalar(_ADD, {**row, "text": None} if message_id is not None else row)
        replies.append(
            OutboundMessage(
                id=outbox_id,
                platform=target.platform,
                chat_id=target.chat_id,
                text=said,
                session_id=session_id,
                thread_id=target.thread_id,
                reply_to=reply_to,
                inbox_id=inbox_id,
                created_at=created_at,
                actions=actions,
                files=_add_files(tx, outbox_id, files) if last else (),
                preview_id=row["preview_id"],
            )
        )
    return replies


def _add_files(tx: Tx, outbox_id: int, files: Sequence[MediaRef]) -> tuple[OutboundFile, ...]:
    sent = tuple(OutboundFile(secrets.token_urlsafe(18), ref) for ref in files)
    if sent:
        tx.executemany(
            _ADD_FILE,
            [
                {
                    "id": f.id,
                    "outbox_id": outbox_id,
                    "position": position,
                    "sha256": f.media.sha256,
                    "mime": f.media.mime,
                    "kind": f.media.kind,
                    "name": f.media.name[:255],
                    "size": f.media.size,
                    "caption": f.media.caption or None,
                }
                for position, f in enumerate(sent)
            ],
        )
    return sent


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


# Outbox rows with each reply's text: its own, or its assistant message's (``message_id``,
# the text stored once); an empty text once that message was deleted (forgotten).
_TEXT = func.coalesce(outbox.c.text, messages.c.content, literal("")).label("text")
_REPLIES: Select[Any] = select(*(c for c in outbox.c if c.name != "text"), _TEXT).select_from(
    outbox.outerjoin(messages, messages.c.id == outbox.c.message_id)
)


async def for_inbox(conn: AsyncConnection, inbox_id: int) -> list[OutboundMessage]:
    rows = await conn.execute(_REPLIES.where(outbox.c.inbox_id == inbox_id).order_by(outbox.c.id))
    return await _with_files(conn, [r for r in rows])


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
        _REPLIES.where(
            outbox.c.platform == platform,
            outbox.c.chat_id == chat_id,
            outbox.c.route == route if route is not None else outbox.c.route.is_(None),
            outbox.c.id > after,
        )
        .order_by(outbox.c.id)
        .limit(limit)
    )
    return await _with_files(conn, list(await conn.execute(stmt)))


async def pending_for(
    conn: AsyncConnection, platform: str, limit: int, after: int = 0
) -> list[OutboundMessage]:
    """Undelivered replies of ``platform`` with an outbox id above ``after``, oldest first."""
    stmt = (
        _REPLIES.where(
            outbox.c.status == "pending", outbox.c.platform == platform, outbox.c.id > after
        )
        .order_by(outbox.c.id)
        .limit(limit)
    )
    return await _with_files(conn, list(await conn.execute(stmt)))


async def file_of(
    conn: AsyncConnection, file_id: str, *, platform: str, route: str | None
) -> tuple[OutboundFile, str] | None:
    """The file ``file_id`` sent to a chat of ``platform`` (and ``route``), with that
    chat's id; None when there is no such file there."""
    stmt = (
        select(outbox_files, outbox.c.chat_id)
        .join(outbox, outbox.c.id == outbox_files.c.outbox_id)
        .where(
            outbox_files.c.id == file_id,
            outbox.c.platform == platform,
            outbox.c.route == route if route is not None else outbox.c.route.is_(None),
        )
    )
    row = (await conn.execute(stmt)).one_or_none()
    return (_file(row), row.chat_id) if row is not None else None


async def count_pending(conn: AsyncConnection) -> int:
    """How many replies, of every platform, are not delivered yet."""
    stmt = select(func.count()).select_from(outbox).where(outbox.c.status == "pending")
    return int((await conn.execute(stmt)).scalar_one())


async def _with_files(conn: AsyncConnection, rows: list[Row[Any]]) -> list[OutboundMessage]:
    """The rows as replies, each with its files (one query for the rows that have any)."""
    ids = [row.id for row in rows if row.file_count]
    files: dict[int, list[OutboundFile]] = {}
    if ids:
        stmt = (
            select(outbox_files)
            .where(outbox_files.c.outbox_id.in_(ids))
            .order_by(outbox_files.c.outbox_id, outbox_files.c.position)
        )
        for found in await conn.execute(stmt):
            files.setdefault(found.outbox_id, []).append(_file(found))
    return [_from_row(row, tuple(files.get(row.id, ()))) for row in rows]


def _file(row: Row[Any]) -> OutboundFile:
    ref = MediaRef.from_json(
        {
            "sha256": row.sha256,
            "mime": row.mime,
            "kind": row.kind,
            "name": row.name,
            "size": row.size,
            "caption": row.caption,
        }
    )
    return OutboundFile(row.id, ref)


def _from_row(row: Row[Any], files: tuple[OutboundFile, ...] = ()) -> OutboundMessage:
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
        files=files,
        preview_id=row.preview_id,
    )


def _actions(stored: Any) -> tuple[ReplyAction, ...]:
    """The ``actions`` column (JSON ``[[label, command], ...]``) as reply buttons."""
    pairs = json.loads(stored) if isinstance(stored, str) else stored
    return tuple(ReplyAction(str(label), str(command)) for label, command in pairs or ())
