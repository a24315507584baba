"""Discovery: engine matches turned into one stored window per conversation lineage."""

from __future__ import annotations

from typing import Any

from core.search import catalog, windows
from core.search.arguments import Detail
from core.store.search.access import Reach
from core.store.search.catalog import SessionCard
from core.store.search.matches import Match, SearchScope
from core.store.search.reader import SearchReader

# Several matches often share a lineage; fetch more than asked so dedup still fills `limit`.
OVERFETCH = 8


async def discover(
    reader: SearchReader,
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
    found = await reader.find_messages(
        query, scope, limit=limit * OVERFETCH, exclude_session_ids=(current_id,)
    )
    picked = await _one_per_lineage(reader, found, reach, current_id, limit)
    return [
        await _hit(reader, match, card, window, full=detail == "full" or rank == 0)
        for rank, (match, card) in enumerate(picked)
    ]


async def _one_per_lineage(
    reader: SearchReader, found: list[Match], reach: Reach, current_id: str, limit: int
) -> list[tuple[Match, SessionCard]]:
    # The engine enforces scope too; checking again here keeps privacy in one place we own.
    cards = await reader.sessions({m.session_id for m in found}, reach)
    roots: set[str] = set()
    picked: list[tuple[Match, SessionCard]] = []
    for match in found:
        card = cards.get(match.session_id)
        if card is None or match.session_id == current_id:
            continue
        root = await reader.lineage_root(match.session_id)
        if root in roots:
            continue
        roots.add(root)
        picked.append((match, card))
        if len(picked) == limit:
            break
    return picked


async def _hit(
    reader: SearchReader, match: Match, card: SessionCard, size: int, *, full: bool
) -> dict[str, Any]:
    hit = catalog.describe(card)
    hit["match_message_id"] = match.message_id
    if not full:
        hit["anchor"] = (await windows.window(reader, card.id, match.message_id, 0))[0]
        hit["compact"] = "Scroll with session_id and around_message_id for the context."
        return hit
    shown = await windows.window(reader, card.id, match.message_id, size)
    hit["window"] = shown
    hit["bookends"] = await windows.bookends(reader, card.id, {m["message_id"] for m in shown})
    return hit
