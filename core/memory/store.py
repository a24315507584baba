"""One bounded memory file (MEMORY.md or USER.md) with safe concurrent writes."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from core.errors import MemoryRefused
from core.memory.operations import (
    DELIMITER,
    Operation,
    apply_operations,
    joined_length,
    parse_entries,
)
from core.memory.threats import scan

RULE = "═" * 46


@dataclass(frozen=True)
class Result:
    """What a batch did (or would do): the entries before and after, or why it was refused.

    When ``refusal`` is set, ``after`` equals ``before`` and nothing was written.
    """

    before: tuple[str, ...]
    after: tuple[str, ...]
    limit: int
    refusal: MemoryRefused | None = None

    @property
    def ok(self) -> bool:
        return self.refusal is None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def chars(self) -> int:
        return joined_length(self.after)


class MemoryStore:
    """Entries in one file, joined by ``"\\n§\\n"``; their joined length stays within ``limit``.

    Reads are lock-free (files are only ever replaced whole). ``apply`` takes an exclusive
    lock on the sidecar ``<file>.lock``, re-reads the file under it and replaces the file
    atomically. ``label`` names the store in prompts and errors ("Memory", "User profile").
    """

    def __init__(self, path: Path, *, limit: int, label: str, heading: str = "") -> None:
        if limit <= 0:
            raise ValueError("limit must be positive")
        self.path = path
        self.limit = limit
        self.label = label
        # The snapshot's title, e.g. "MEMORY (your personal notes)"; the label by default.
        self.heading = heading or label.upper()
        self._lock = FileLock(path.with_name(path.name + ".lock"))

    def entries(self) -> tuple[str, ...]:
        """The entries on disk now."""
        try:
            return parse_entries(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return ()

    def usage(self) -> int:
        return joined_length(self.entries())

    def validate(self, operations: Sequence[Operation]) -> Result:
        """Dry run: the result of ``operations`` against the file as it is now; writes nothing."""
        return self._compute(self.entries(), operations)

    def apply(self, operations: Sequence[Operation]) -> Result:
        """Apply ``operations`` all-or-nothing against fresh disk state, under the file lock."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            result = self._compute(self.entries(), operations)
            if result.changed:
                self._write(result.after)
        return result

    def render_snapshot(self) -> str:
        """The prompt block for this store, or ``""`` when it is empty.

        Entries that match a threat pattern are shown as ``[BLOCKED: <id>]`` and stay on disk
        so a person can remove them.
        """
        entries = self.entries()
        if not entries:
            return ""
        used = joined_length(entries)
        header = f"{self.heading} [{used * 100 // self.limit}% — {used:,}/{self.limit:,} chars]"
        body = DELIMITER.join(_displayed(entry) for entry in entries)
        return f"{RULE}\n{header}\n{RULE}\n{body}"

    def _compute(self, entries: tuple[str, ...], operations: Sequence[Operation]) -> Result:
        try:
            after = apply_operations(entries, operations, self.limit)
        except MemoryRefused as refusal:
            return Result(entries, entries, self.limit, refusal)
        return Result(entries, after, self.limit)

    def _write(self, entries: tuple[str, ...]) -> None:
        write_atomically(self.path, DELIMITER.join(entries))


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``: temp file in the same folder, fsync, ``os.replace``."""
    descriptor, temp_name = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as temp:
            temp.write(text)
            temp.flush()
            os.fsync(temp.fileno())
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    _fsync_directory(path.parent)


def _displayed(entry: str) -> str:
    pattern_id = scan(entry)
    return entry if pattern_id is None else f"[BLOCKED: {pattern_id}]"


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; not every platform can open a directory.
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
