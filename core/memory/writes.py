"""Built-in memory writes as events, for whoever mirrors them (the external provider)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from core.memory.operations import Action, Operation, changed_entries
from core.record import record


@record
class MemoryWrite:
    """One applied change to MEMORY.md or USER.md.

    ``content`` is the entry as it now reads (add, patch) or the entry removed (remove).
    """

    target: str
    action: Action
    content: str
    session_id: str


OnMemoryWrite = Callable[[MemoryWrite], Awaitable[None]]


def applied_writes(
    target: str, before: Sequence[str], operations: Sequence[Operation], session_id: str
) -> list[MemoryWrite]:
    """The writes a batch applied to a store that held ``before``, in order."""
    return [
        MemoryWrite(target, action, entry, session_id)
        for action, entry in changed_entries(before, operations)
    ]
