"""Why a memory write was refused; each refusal carries what the caller needs to retry.

MemoryRefused                a write was refused; nothing was written
├── InvalidContent           empty content, or a line that is only the entry separator
├── ThreatDetected           an entry would match a threat pattern (``pattern_id``)
├── NoMatch                  ``old_text`` is in no entry (``closest_entries``)
├── AmbiguousMatch           ``old_text`` is in several different entries (``matches``)
├── EntryChanged             a staged patch/remove's pinned entry is gone (``entry``)
└── OverLimit                the batch's final result would not fit (``projected``)

``index`` is the position of the failing operation in its batch (``None`` for OverLimit,
which is a property of the whole batch).
"""

from __future__ import annotations

from core.errors import ChatgateError


class MemoryRefused(ChatgateError):
    """A memory write was refused; the store on disk is unchanged."""

    index: int | None = None


class InvalidContent(MemoryRefused):
    """The content is empty, or contains a line that is only the entry separator."""


class ThreatDetected(MemoryRefused):
    def __init__(self, pattern_id: str) -> None:
        super().__init__(f"content matches threat pattern {pattern_id!r}")
        self.pattern_id = pattern_id


class NoMatch(MemoryRefused):
    def __init__(self, old_text: str, closest_entries: tuple[str, ...]) -> None:
        super().__init__(f"no entry contains {old_text!r}")
        self.old_text = old_text
        self.closest_entries = closest_entries


class AmbiguousMatch(MemoryRefused):
    def __init__(self, old_text: str, matches: tuple[str, ...]) -> None:
        super().__init__(f"{old_text!r} is in {len(matches)} different entries")
        self.old_text = old_text
        self.matches = matches


class EntryChanged(MemoryRefused):
    """The entry a staged patch or remove was pinned to is no longer present verbatim."""

    def __init__(self, entry: str) -> None:
        super().__init__(f"the entry it targets changed since it was staged: {entry!r}")
        self.entry = entry


class OverLimit(MemoryRefused):
    def __init__(self, current: int, projected: int, limit: int) -> None:
        super().__init__(f"{projected} chars would exceed the limit of {limit}")
        self.current = current
        self.projected = projected
        self.limit = limit

    @property
    def excess(self) -> int:
        return self.projected - self.limit
