"""What ``/status`` says about memory: writes made in this session that wait for the next.

The count is derived from the session's stored tool results, so it survives restarts
and needs no bookkeeping of its own.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable

from core.memory.tool import NO_CHANGE
from core.store.db import SessionDB
from core.store.records import SessionRow


def writes_waiting(tool_results: Iterable[str | None]) -> int:
    """How many ``memory`` tool results record a write that changed a file."""
    return sum(1 for text in tool_results if _changed_disk(text))


def _changed_disk(text: str | None) -> bool:
    try:
        payload = json.loads(text or "")
    except json.JSONDecodeError:
        return False
    return (
        isinstance(payload, dict)
        and payload.get("success") is True
        and not payload.get("staged")
        and payload.get("message") != NO_CHANGE
    )


def status_line(waiting: int) -> str:
    if waiting == 0:
        return "Memory: no writes waiting; the prompt matches the memory files."
    noun = "write" if waiting == 1 else "writes"
    return f"Memory: {waiting} {noun} this session, shown from the next session (/new)."


def memory_status(db: SessionDB) -> Callable[[SessionRow], Awaitable[list[str]]]:
    """The ``/status`` lines for a session: its memory writes waiting for the next one."""

    async def lines(session: SessionRow) -> list[str]:
        return [status_line(writes_waiting(await db.tool_results(session.id, "memory")))]

    return lines
