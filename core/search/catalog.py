"""Session rows as `session_search` sees them: looked up only within the caller's reach."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from core.search.access import Reach, visible
from core.search.windows import AnyRow, iso
from core.store.schema import messages, sessions

PREVIEW_CHARS = 200
# A lineage is a chain of compactions; a cycle or runaway chain must not hang a search.
MAX_LINEAGE_DEPTH = 1_000

_COLUMNS = (
    sessions.c.id,
    sessions.c.title,
    sessions.c.parent_session_id,
    sessions.c.started_at,
    sessions.c.ended_at,
    sessions.c.end_reason,
)


async def thread_of(conn: AsyncConnection, session_id: str) -> tuple[bool, str | None]:
    """Whether the session exists, and its thread id."""
    stmt = select(sessions.c.thread_id).where(sessions.c.id == session_id)
    row = (await conn.execute(stmt)).first()
    return (row is not None, None if row is None else row.thread_id)


async def find(conn: AsyncConnection, session_id: str, reach: Reach) -> AnyRow | None:
    """The session, or None when it is missing *or* outside ``reach`` (indistinguishable)."""
    stmt = select(*_COLUMNS).where(sessions.c.id == session_id, visible(reach))
    return (await conn.execute(stmt)).first()


async def find_many(
    conn: AsyncConnection, session_ids: set[str], reach: Reach
) -> dict[str, AnyRow]:
    if not session_ids:
        return {}
    stmt = select(*_COLUMNS).where(sessions.c.id.in_(session_ids), visible(reach))
    return {row.id: row for row in (await conn.execute(stmt)).all()}


def describe(row: AnyRow) -> dict[str, Any]:
    item: dict[str, Any] = {
        "session_id": row.id,
        "title": row.title,
        "started_at": iso(row.started_at),
        "ended_at": iso(row.ended_at),
    }
    if row.end_reason:
        item["end_reason"] = row.end_reason
    if row.parent_session_id:
        item["parent_session_id"] = row.parent_session_id
    return item


async def lineage_root(conn: AsyncConnection, session_id: str) -> str:
    """The first session of the compaction chain ``session_id`` belongs to."""
    current = session_id
    for _ in range(MAX_LINEAGE_DEPTH):
        stmt = select(sessions.c.parent_session_id).where(sessions.c.id == current)
        parent = (await conn.execute(stmt)).scalar_one_or_none()
        if parent is None:
            return current
        current = parent
    return current


async def recent(
    conn: AsyncConnection, reach: Reach, limit: int, current_id: str
) -> list[dict[str, Any]]:
    """The most recently active sessions in reach, with a preview and message count."""
    first_user = (
        select(messages.c.content)
        .where(messages.c.session_id == sessions.c.id, messages.c.role == "user")
        .order_by(messages.c.id)
        .limit(1)
        .scalar_subquery()
    )
    counted = select(func.count()).where(messages.c.session_id == sessions.c.id).scalar_subquery()
    stmt = (
        select(
            *_COLUMNS, sessions.c.last_active_at, first_user.label("preview"), counted.label("n")
        )
        .where(visible(reach))
        .order_by(sessions.c.last_active_at.desc(), sessions.c.id)
        .limit(limit)
    )
    return [_summary(row, current_id) for row in (await conn.execute(stmt)).all()]


def _summary(row: AnyRow, current_id: str) -> dict[str, Any]:
    preview: str = row.preview or ""
    item = describe(row)
    item["title"] = row.title or preview[:80] or None
    item["preview"] = preview[:PREVIEW_CHARS]
    item["message_count"] = row.n
    item["last_active_at"] = iso(row.last_active_at)
    if row.id == current_id:
        item["current"] = True
    return item
