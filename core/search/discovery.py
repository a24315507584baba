"""Discovery: engine matches turned into one stored window per conversation lineage."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from core.search import catalog, windows
from core.search.access import Reach
from core.search.arguments import Detail
from core.search.engine import Match, SearchScope, find_messages
from core.search.windows import AnyRow

# Several matches often share a lineage; fetch more than asked so dedup still fills `limit`.
OVERFETCH = 8


async def discover(
    conn: AsyncConnection,
    query: str,
    reach: Reach,
    *,
    current_id: str,
    limit: int,
    window: int,
    detail: Detail,
) -> list[dict[str, Any]]:
    """Up to ``limit`` hits, one per lineage, best first.

    The current session is skipped (its messages are already in the model's context);
    ended ancestors of it are not, since compaction took their content out of context.
    """
    scope = SearchScope(
        platform=reach.platform,
        chat_id=reach.chat_id,
        thread_id=reach.thread_id,
        user_id=reach.user_id,
        mode=reach.mode,
    )
    found = await find_messages(
        conn, query, scope, limit=limit * OVERFETCH, exclude_session_ids=(current_id,)
    )
    picked = await _one_per_lineage(conn, found, reach, current_id, limit)
    return [
        await _hit(conn, match, row, window, full=detail == "full" or rank == 0)
        for rank, (match, row) in enumerate(picked)
    ]


async def _one_per_lineage(
    conn: AsyncConnection, found: list[Match], reach: Reach, current_id: str, limit: int
) -> list[tuple[Match, AnyRow]]:
    # The engine enforces scope too; checking again here keeps privacy in one place we own.
    rows = await catalog.find_many(conn, {m.session_id for m in found}, reach)
    roots: set[str] = set()
    picked: list[tuple[Match, AnyRow]] = []
    for match in found:
        row = rows.get(match.session_id)
        if row is None or match.session_id == current_id:
            continue
        root = await catalog.lineage_root(conn, match.session_id)
        if root in roots:
            continue
        roots.add(root)
        picked.append((match, row))
        if len(picked) == limit:
            break
    return picked


async def _hit(
    conn: AsyncConnection, match: Match, row: AnyRow, size: int, *, full: bool
) -> dict[str, Any]:
    hit = catalog.describe(row)
    hit["match_message_id"] = match.message_id
    if not full:
        hit["anchor"] = (await windows.window(conn, row.id, match.message_id, 0))[0]
        hit["compact"] = "Scroll with session_id and around_message_id for the context."
        return hit
    shown = await windows.window(conn, row.id, match.message_id, size)
    hit["window"] = shown
    hit["bookends"] = await windows.bookends(conn, row.id, {m["message_id"] for m in shown})
    return hit
