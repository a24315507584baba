"""Stored messages as the search reads them: a session's first and last rows, a window
around one message, and message texts by id. Real rows, never summarised."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

from sqlalchemy import Row, Select, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from core.record import record
from core.store.schema import messages

# A result row of any width (SQLAlchemy types rows by their column tuple).
AnyRow: TypeAlias = Row[*tuple[Any, ...]]

_COLUMNS = (
    messages.c.id,
    messages.c.role,
    messages.c.content,
    messages.c.tool_name,
    messages.c.created_at,
)


@record
class MessageLine:
    """One stored message with what a reader of the transcript needs."""

    id: int
    role: str
    content: str | None
    tool_name: str | None
    created_at: float


async def count_messages(conn: AsyncConnection, session_id: str) -> int:
    stmt = select(func.count()).where(messages.c.session_id == session_id)
    return int((await conn.execute(stmt)).scalar_one())


async def head(conn: AsyncConnection, session_id: str, n: int) -> list[MessageLine]:
    """The first ``n`` messages of a session, oldest first."""
    stmt = (
        select(*_COLUMNS)
        .where(messages.c.session_id == session_id)
        .order_by(messages.c.id)
        .limit(n)
    )
    return await _lines(conn, stmt)


async def tail(conn: AsyncConnection, session_id: str, n: int) -> list[MessageLine]:
    """The last ``n`` messages of a session, oldest first."""
    stmt = (
        select(*_COLUMNS)
        .where(messages.c.session_id == session_id)
        .order_by(messages.c.id.desc())
        .limit(n)
    )
    return list(reversed(await _lines(conn, stmt)))


async def has_message(conn: AsyncConnection, session_id: str, message_id: int) -> bool:
    stmt = select(messages.c.id).where(
        messages.c.session_id == session_id, messages.c.id == message_id
    )
    return (await conn.execute(stmt)).first() is not None


async def around(
    conn: AsyncConnection, session_id: str, anchor_id: int, size: int
) -> list[MessageLine]:
    """The anchor message with up to ``size`` messages either side, oldest first."""
    in_session = messages.c.session_id == session_id
    before = (
        select(*_COLUMNS)
        .where(in_session, messages.c.id <= anchor_id)
        .order_by(messages.c.id.desc())
        .limit(size + 1)
    )
    after = (
        select(*_COLUMNS)
        .where(in_session, messages.c.id > anchor_id)
        .order_by(messages.c.id)
        .limit(size)
    )
    return [*reversed(await _lines(conn, before)), *await _lines(conn, after)]


async def contents(conn: AsyncConnection, message_ids: Sequence[int]) -> dict[int, str]:
    """The text of each message in ``message_ids`` that exists ("" for no text)."""
    stmt = select(messages.c.id, messages.c.content).where(messages.c.id.in_(message_ids))
    return {r.id: r.content or "" for r in await conn.execute(stmt)}


async def _lines(conn: AsyncConnection, stmt: Select[*tuple[Any, ...]]) -> list[MessageLine]:
    return [_line(row) for row in (await conn.execute(stmt)).all()]


def _line(row: AnyRow) -> MessageLine:
    return MessageLine(row.id, row.role, row.content, row.tool_name, row.created_at)
