"""Stored message windows as the model reads them: real rows, capped, never summarised."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypeAlias

from sqlalchemy import Row, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from core.store.schema import messages

WINDOW_CHARS = 4_000
BOOKEND_CHARS = 1_200
BOOKEND_SIZE = 3
READ_HEAD = 20
READ_TAIL = 10

# A result row of any width (SQLAlchemy types rows by their column tuple).
AnyRow: TypeAlias = Row[*tuple[Any, ...]]

_COLUMNS = (
    messages.c.id,
    messages.c.role,
    messages.c.content,
    messages.c.tool_name,
    messages.c.created_at,
)


def iso(ts: float | None) -> str | None:
    """Unix seconds as an ISO 8601 UTC timestamp (seconds precision)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")


def render(row: AnyRow, cap: int, *, anchor: bool = False) -> dict[str, Any]:
    """One message as a dict; content longer than ``cap`` is cut and the cut is stated."""
    content: str = row.content or ""
    item: dict[str, Any] = {
        "message_id": row.id,
        "role": row.role,
        "created_at": iso(row.created_at),
        "content": content[:cap],
    }
    if row.tool_name:
        item["tool_name"] = row.tool_name
    if len(content) > cap:
        item["truncated"] = f"cut at {cap} of {len(content)} chars"
    if anchor:
        item["anchor"] = True
    return item


def render_all(rows: Sequence[AnyRow], cap: int) -> list[dict[str, Any]]:
    return [render(row, cap) for row in rows]


async def count_messages(conn: AsyncConnection, session_id: str) -> int:
    stmt = select(func.count()).where(messages.c.session_id == session_id)
    return int((await conn.execute(stmt)).scalar_one())


async def head(conn: AsyncConnection, session_id: str, n: int) -> list[AnyRow]:
    """The first ``n`` messages of a session, oldest first."""
    stmt = (
        select(*_COLUMNS)
        .where(messages.c.session_id == session_id)
        .order_by(messages.c.id)
        .limit(n)
    )
    return list((await conn.execute(stmt)).all())


async def tail(conn: AsyncConnection, session_id: str, n: int) -> list[AnyRow]:
    """The last ``n`` messages of a session, oldest first."""
    stmt = (
        select(*_COLUMNS)
        .where(messages.c.session_id == session_id)
        .order_by(messages.c.id.desc())
        .limit(n)
    )
    return list(reversed((await conn.execute(stmt)).all()))


async def has_message(conn: AsyncConnection, session_id: str, message_id: int) -> bool:
    stmt = select(messages.c.id).where(
        messages.c.session_id == session_id, messages.c.id == message_id
    )
    return (await conn.execute(stmt)).first() is not None


async def window(
    conn: AsyncConnection, session_id: str, anchor_id: int, size: int
) -> list[dict[str, Any]]:
    """The anchor message with up to ``size`` messages either side, the anchor flagged."""
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
    rows = [*reversed((await conn.execute(before)).all()), *(await conn.execute(after)).all()]
    return [render(row, WINDOW_CHARS, anchor=row.id == anchor_id) for row in rows]


async def bookends(
    conn: AsyncConnection, session_id: str, skip_ids: set[int]
) -> dict[str, list[dict[str, Any]]]:
    """The first and last messages of a session, leaving out those already in ``skip_ids``."""
    first = [r for r in await head(conn, session_id, BOOKEND_SIZE) if r.id not in skip_ids]
    shown = skip_ids | {r.id for r in first}
    last = [r for r in await tail(conn, session_id, BOOKEND_SIZE) if r.id not in shown]
    return {
        "first": render_all(first, BOOKEND_CHARS),
        "last": render_all(last, BOOKEND_CHARS),
    }


async def whole(conn: AsyncConnection, session_id: str) -> dict[str, Any]:
    """A whole session, or its first and last messages when it is long."""
    total = await count_messages(conn, session_id)
    if total <= READ_HEAD + READ_TAIL:
        rows = await head(conn, session_id, total)
        return {"message_count": total, "messages": render_all(rows, WINDOW_CHARS)}
    omitted = total - READ_HEAD - READ_TAIL
    return {
        "message_count": total,
        "messages": render_all(await head(conn, session_id, READ_HEAD), WINDOW_CHARS),
        "omitted": (
            f"{omitted} messages omitted between these; scroll with session_id and "
            "around_message_id to see them."
        ),
        "last_messages": render_all(await tail(conn, session_id, READ_TAIL), WINDOW_CHARS),
    }
