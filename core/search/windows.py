"""Stored message windows as the model reads them: real rows, capped, never summarised."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from core.store.search.reader import SearchReader
from core.store.search.windows import MessageLine

WINDOW_CHARS = 4_000
BOOKEND_CHARS = 1_200
BOOKEND_SIZE = 3
READ_HEAD = 20
READ_TAIL = 10


def iso(ts: float | None) -> str | None:
    """Unix seconds as an ISO 8601 UTC timestamp (seconds precision)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")


def render(row: MessageLine, cap: int, *, anchor: bool = False) -> dict[str, Any]:
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


def render_all(rows: Sequence[MessageLine], cap: int) -> list[dict[str, Any]]:
    return [render(row, cap) for row in rows]


async def window(
    reader: SearchReader, session_id: str, anchor_id: int, size: int
) -> list[dict[str, Any]]:
    """The anchor message with up to ``size`` messages either side, the anchor flagged."""
    rows = await reader.around(session_id, anchor_id, size)
    return [render(row, WINDOW_CHARS, anchor=row.id == anchor_id) for row in rows]


async def bookends(
    reader: SearchReader, session_id: str, skip_ids: set[int]
) -> dict[str, list[dict[str, Any]]]:
    """The first and last messages of a session, leaving out those already in ``skip_ids``."""
    head = await reader.first_messages(session_id, BOOKEND_SIZE)
    first = [r for r in head if r.id not in skip_ids]
    shown = skip_ids | {r.id for r in first}
    tail = await reader.last_messages(session_id, BOOKEND_SIZE)
    last = [r for r in tail if r.id not in shown]
    return {
        "first": render_all(first, BOOKEND_CHARS),
        "last": render_all(last, BOOKEND_CHARS),
    }


async def whole(reader: SearchReader, session_id: str) -> dict[str, Any]:
    """A whole session, or its first and last messages when it is long."""
    total = await reader.message_count(session_id)
    if total <= READ_HEAD + READ_TAIL:
        rows = await reader.first_messages(session_id, total)
        return {"message_count": total, "messages": render_all(rows, WINDOW_CHARS)}
    omitted = total - READ_HEAD - READ_TAIL
    return {
        "message_count": total,
        "messages": render_all(await reader.first_messages(session_id, READ_HEAD), WINDOW_CHARS),
        "omitted": (
            f"{omitted} messages omitted between these; scroll with session_id and "
            "around_message_id to see them."
        ),
        "last_messages": render_all(
            await reader.last_messages(session_id, READ_TAIL), WINDOW_CHARS
        ),
    }
