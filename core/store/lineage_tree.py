"""A session's compaction family as ``chatgate sessions show --lineage`` prints it:
its ancestors from the root down, then its descendants depth-first."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from core.record import record
from core.store.schema import messages, sessions

# A lineage is a chain of compactions; a cycle or runaway chain must not hang the CLI.
MAX_LINEAGE = 1_000


@record
class LineageEntry:
    """One session of a lineage; ``depth`` 0 is the root."""

    id: str
    depth: int
    started_at: float
    ended_at: float | None
    end_reason: str | None
    messages: int


async def lineage_of(conn: AsyncConnection, session_id: str) -> list[LineageEntry]:
    """Ancestors from the root down to ``session_id``, then its descendants depth-first."""
    ancestors = await _ancestors(conn, session_id)
    below = await _descendants(conn, session_id, set(ancestors))
    placed = [(sid, depth) for depth, sid in enumerate(ancestors)]
    placed += [(sid, len(ancestors) + depth) for sid, depth in below]
    details = await _details(conn, [sid for sid, _ in placed])
    return [LineageEntry(sid, depth, *details[sid]) for sid, depth in placed if sid in details]


async def _ancestors(conn: AsyncConnection, session_id: str) -> list[str]:
    chain = [session_id]
    while len(chain) < MAX_LINEAGE:
        stmt = select(sessions.c.parent_session_id).where(sessions.c.id == chain[-1])
        parent = (await conn.execute(stmt)).scalar_one_or_none()
        if parent is None or parent in chain:
            break
        chain.append(parent)
    return chain[::-1]


async def _descendants(
    conn: AsyncConnection, session_id: str, seen: set[str]
) -> list[tuple[str, int]]:
    """Children of ``session_id`` and theirs, depth-first, each with its depth below it."""
    found: list[tuple[str, int]] = []
    stack = [(child, 0) for child in reversed(await _children(conn, session_id))]
    while stack and len(found) < MAX_LINEAGE:
        sid, depth = stack.pop()
        if sid in seen:
            continue
        seen.add(sid)
        found.append((sid, depth))
        stack.extend((child, depth + 1) for child in reversed(await _children(conn, sid)))
    return found


async def _children(conn: AsyncConnection, session_id: str) -> list[str]:
    stmt = (
        select(sessions.c.id)
        .where(sessions.c.parent_session_id == session_id)
        .order_by(sessions.c.started_at, sessions.c.id)
    )
    return list((await conn.execute(stmt)).scalars())


async def _details(
    conn: AsyncConnection, ids: Sequence[str]
) -> dict[str, tuple[float, float | None, str | None, int]]:
    # Count stored rows rather than trust the counter column: this is what search reaches.
    counts = (
        select(messages.c.session_id, func.count().label("n"))
        .where(messages.c.session_id.in_(ids))
        .group_by(messages.c.session_id)
        .subquery()
    )
    stmt = (
        select(
            sessions.c.id,
            sessions.c.started_at,
            sessions.c.ended_at,
            sessions.c.end_reason,
            func.coalesce(counts.c.n, 0),
        )
        .outerjoin(counts, counts.c.session_id == sessions.c.id)
        .where(sessions.c.id.in_(ids))
    )
    rows = await conn.execute(stmt)
    return {r[0]: (float(r[1]), r[2], r[3], int(r[4])) for r in rows}
