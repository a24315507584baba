"""Pure memory edits: one batch of operations applied to a tuple of entries, all or nothing.

Entries never carry leading or trailing whitespace and never contain a line that is only
``§``, so ``DELIMITER.join`` and ``parse_entries`` round-trip exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from typing import Literal

from core.errors import (
    AmbiguousMatch,
    EntryChanged,
    InvalidContent,
    MemoryRefused,
    NoMatch,
    OverLimit,
    ThreatDetected,
)
from core.memory.threats import scan

DELIMITER = "\n§\n"
CLOSEST_COUNT = 3

Action = Literal["add", "patch", "remove"]


@dataclass(frozen=True)
class Operation:
    """``add`` appends ``content``; ``patch`` replaces the span ``old_text`` inside one entry
    with ``content``; ``remove`` deletes the one entry that contains ``old_text``.

    ``pinned`` (set on writes staged for approval) is the full entry a patch or remove must
    act on; when it is no longer present verbatim the batch is refused with ``EntryChanged``.
    """

    action: Action
    content: str = ""
    old_text: str = ""
    pinned: str | None = None


def parse_entries(text: str) -> tuple[str, ...]:
    entries = (entry.strip() for entry in text.split(DELIMITER))
    return tuple(entry for entry in entries if entry)


def joined_length(entries: Sequence[str]) -> int:
    return len(DELIMITER.join(entries))


def apply_operations(
    entries: Sequence[str], operations: Sequence[Operation], limit: int
) -> tuple[str, ...]:
    """Return the entries after the whole batch, or raise the first ``MemoryRefused``.

    The limit is checked only on the final result. A store that is already over its limit
    (the limit was lowered) still accepts batches that do not make it longer.
    """
    working = list(entries)
    for index, operation in enumerate(operations):
        try:
            _apply_one(working, operation)
        except MemoryRefused as refusal:
            refusal.index = index
            raise
    current, projected = joined_length(entries), joined_length(working)
    if projected > limit and projected > current:
        raise OverLimit(current, projected, limit)
    return tuple(working)


def _apply_one(working: list[str], operation: Operation) -> str | None:
    """Apply one operation to ``working``; the entry it added, patched (as it now reads) or
    removed, or None when it changed nothing."""
    if operation.action == "add":
        entry = checked_entry(operation.content)
        if entry in working:
            return None
        working.append(entry)
        return entry
    position = _target(working, operation)
    if operation.action == "remove":
        return working.pop(position)
    if not operation.content.strip():
        raise InvalidContent("patch needs replacement text in content; use remove to delete")
    patched = checked_entry(working[position].replace(operation.old_text, operation.content, 1))
    if patched == working[position]:
        return None  # replaced a span with itself (before: read as a duplicate and deleted)
    if patched in working:
        del working[position]  # the patch made it a duplicate of another entry
    else:
        working[position] = patched
    return patched


def changed_entries(
    entries: Sequence[str], operations: Sequence[Operation]
) -> list[tuple[Action, str]]:
    """What each operation of a batch that applies cleanly to ``entries`` changes: its
    action and the entry it added, patched (as it now reads) or removed; no-ops left out."""
    working = list(entries)
    changes: list[tuple[Action, str]] = []
    for operation in operations:
        entry = _apply_one(working, operation)
        if entry is not None:
            changes.append((operation.action, entry))
    return changes


def _target(working: Sequence[str], operation: Operation) -> int:
    if operation.pinned is None:
        return find_entry(working, operation.old_text)
    if operation.pinned not in working:
        raise EntryChanged(operation.pinned)
    return working.index(operation.pinned)


def pin_targets(entries: Sequence[str], operations: Sequence[Operation]) -> tuple[Operation, ...]:
    """``operations`` with every patch and remove pinned to the entry it acts on in ``entries``.

    Call it with a batch that applies cleanly to ``entries``; a later operation is pinned to
    the entry as the earlier ones in the batch leave it.
    """
    working = list(entries)
    pinned: list[Operation] = []
    for operation in operations:
        if operation.action != "add":
            operation = replace(operation, pinned=working[_target(working, operation)])
        pinned.append(operation)
        _apply_one(working, operation)
    return tuple(pinned)


def checked_entry(content: str) -> str:
    """Return ``content`` as a storable entry, or raise why it cannot be stored."""
    entry = content.strip()
    if not entry:
        raise InvalidContent("content is empty")
    if any(line.strip() == "§" for line in entry.splitlines()):
        raise InvalidContent("content has a line that is only '§', the entry separator")
    pattern_id = scan(entry)
    if pattern_id is not None:
        raise ThreatDetected(pattern_id)
    return entry


def find_entry(entries: Sequence[str], old_text: str) -> int:
    """Index of the one entry ``old_text`` designates; a whole-entry match wins."""
    if not old_text.strip():
        raise InvalidContent("old_text is empty")
    if old_text.strip() in entries:
        return entries.index(old_text.strip())
    matches = tuple(dict.fromkeys(entry for entry in entries if old_text in entry))
    if not matches:
        raise NoMatch(old_text, closest_entries(entries, old_text))
    if len(matches) > 1:
        raise AmbiguousMatch(old_text, matches)
    return entries.index(matches[0])


def closest_entries(entries: Sequence[str], text: str) -> tuple[str, ...]:
    """The few entries most similar to ``text``, best first."""
    scored = {entry: _similarity(text.lower(), entry.lower()) for entry in entries}
    ranked = sorted(scored, key=scored.__getitem__, reverse=True)
    return tuple(entry for entry in ranked[:CLOSEST_COUNT] if scored[entry] > 0)


def _similarity(text: str, entry: str) -> float:
    # old_text is usually a span of a longer entry, so compare it with the entry's best
    # aligned window as well as with the whole entry.
    matcher = SequenceMatcher(None, text, entry, autojunk=False)
    best = matcher.ratio()
    for block in matcher.get_matching_blocks():
        start = max(0, block.b - block.a)
        window = entry[start : start + len(text)]
        best = max(best, SequenceMatcher(None, text, window, autojunk=False).ratio())
    return best
