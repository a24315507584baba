"""Session rows as `session_search` shows them: who, when, and how each one ended."""

from __future__ import annotations

from typing import Any

from core.search.windows import iso
from core.store.search.catalog import RecentSession, SessionCard

PREVIEW_CHARS = 200


def describe(card: SessionCard) -> dict[str, Any]:
    item: dict[str, Any] = {
        "session_id": card.id,
        "title": card.title,
        "started_at": iso(card.started_at),
        "ended_at": iso(card.ended_at),
    }
    if card.end_reason:
        item["end_reason"] = card.end_reason
    if card.parent_session_id:
        item["parent_session_id"] = card.parent_session_id
    return item


def summary(recent: RecentSession, current_id: str) -> dict[str, Any]:
    """A browse entry: the card, a preview of the first user message and the counts."""
    preview: str = recent.preview or ""
    item = describe(recent.card)
    item["title"] = recent.card.title or preview[:80] or None
    item["preview"] = preview[:PREVIEW_CHARS]
    item["message_count"] = recent.message_count
    item["last_active_at"] = iso(recent.last_active_at)
    if recent.card.id == current_id:
        item["current"] = True
    return item
