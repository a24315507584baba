"""Session rows as ``session_search`` sees them: looked up only within the caller's reach."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from core.record import record
from core.store.schema import messages, sessions
from core.store.search.access import Reach, visible
from core.store.search.windows import AnyRow

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


@record
class SessionCard:
    """What a search result says about the session it comes from."""

    id: str
    title: str | None
    parent_session_id: str | None
    started_at: float
    ended_at: float | None
    end_reason: str | None


@record
class RecentSession:
    """A session in the browse list: its card, when it was last active, its first user
    message (``preview``, None when it has none) and how many messages it holds."""

    card: SessionCard
    last_active_at: float
    preview: str | None
    message_count: int


async def thread_of(conn: AsyncConnection, session_id: str) -> tuple[bool, str | None]:
    """Whether the session exists, and its thread id."""
    stmt = select(sessions.c.thread_id).where(sessions.c.id == session_id)
    row = (await conn.execute(stmt)).first()
    return (row is not None, None if row is None else row.thread_id)


async def find(conn: AsyncConnection, session_id: str, reach: Reach) -> SessionCard | None:
    """The session, or None when it is missing *or* outside ``reach`` (indistinguishable)."""
    stmt = select(*_COLUMNS).where(sessions.c.id == session_id, visible(reach))
    row = (await conn.execute(stmt)).first()
    return None if row is None else _card(row)


async def find_many(
    conn: AsyncConnection, session_ids: set[str], reach: Reach
) -> dict[str, SessionCard]:
    """The sessions of ``session_ids`` that are within ``reach``, by id."""
    if not session_ids:
        return {}
    stmt = select(*_COLUMNS).where(sessions.c.id.in_(session_ids), visible(reach))
    return {row.id: _card(row) for row in (await conn.execute(stmt)).all()}


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


async def recent(conn: AsyncConnection, reach: Reach, limit: int) -> list[RecentSession]:
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
    return [
        RecentSession(_card(row), row.last_active_at, row.preview, row.n)
        for row in (await conn.execute(stmt)).all()
    ]


def _card(row: AnyRow) -> SessionCard:
    return SessionCard(
        row.id, row.title, row.parent_session_id, row.started_at, row.ended_at, row.end_reason
    )
