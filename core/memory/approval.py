"""Write approval: memory writes staged as files until a person approves or rejects them.

Each staged write is ``$CHATGATE_HOME/pending/memory/<id>.json``. It records the store file
it is for (so a per-person USER.md is replayed against the right file), that store's limit
and label, and its operations; every patch and remove is pinned to the full entry it
targeted when it was staged. Approval replays the operations against the file as it is
then, under the store's lock and with the limit applied. A refused approval (the pinned
entry changed, the store is full, ...) leaves the write pending with the reason.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core.errors import ChatgateError, MemoryRefused, OverLimit, PendingNotFound
from core.memory.operations import Action, Operation, pin_targets
from core.memory.store import MemoryStore, Result
from core.pending import UNREADABLE, PendingFolder

log = logging.getLogger(__name__)

_ACTIONS: tuple[Action, ...] = ("add", "patch", "remove")
UNPINNED = (
    "it was staged without the entry it changes, so its target cannot be verified; "
    "reject it and make the change again"
)


@dataclass(frozen=True)
class PendingWrite:
    """One staged write: a batch for one store file, its patches and removes pinned."""

    id: str
    created_at: float
    target: str
    path: Path
    limit: int
    label: str
    operations: tuple[Operation, ...]
    last_refusal: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created_at": self.created_at,
            "target": self.target,
            "path": str(self.path),
            "limit": self.limit,
            "label": self.label,
            "operations": [_operation_json(op) for op in self.operations],
            "last_refusal": self.last_refusal,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PendingWrite:
        """Raises ``ValueError`` (or ``KeyError``/``TypeError``) for a malformed record."""
        operations = tuple(_operation_from(raw) for raw in data["operations"])
        if not operations:
            raise ValueError("no operations")
        return cls(
            id=str(data["id"]),
            created_at=float(data["created_at"]),
            target=str(data["target"]),
            path=Path(data["path"]),
            limit=int(data["limit"]),
            label=str(data["label"]),
            operations=operations,
            last_refusal=data.get("last_refusal"),
        )


@dataclass(frozen=True)
class Decision:
    """What approving a pending write did: ``result`` when applied, else ``refusal``."""

    write: PendingWrite
    result: Result | None = None
    refusal: str | None = None

    @property
    def approved(self) -> bool:
        return self.refusal is None

    @property
    def replaced(self) -> tuple[str, ...]:
        """The full text of every entry the write patched or removed."""
        return tuple(op.pinned for op in self.write.operations if op.pinned is not None)


class PendingWrites:
    """The staged memory writes of one chatgate home.

    A lock file in the folder serialises staging, approving and rejecting, so one write
    is never applied twice by two reviewers at once.
    """

    def __init__(self, home: Path) -> None:
        self.memories = home / "memories"
        self.pending = PendingFolder(home / "pending" / "memory", "memory")
        self.folder = self.pending.folder

    def stage(
        self,
        target: str,
        store: MemoryStore,
        operations: Sequence[Operation],
        entries: Sequence[str],
    ) -> PendingWrite:
        """Stage ``operations``, already validated against ``entries``, for ``store``.

        The same batch for the same file staged twice keeps its first id.
        """
        pinned = pin_targets(entries, operations)
        with self.pending.locked():
            existing = self.list()
            for other in existing:
                if other.path == store.path and other.operations == pinned:
                    return other
            # Strictly after every earlier write, so "approve all" replays them in order.
            created = max([time.time(), *(w.created_at + 1e-6 for w in existing)])
            write = PendingWrite(
                self.pending.new_id(), created, target, store.path, store.limit, store.label, pinned
            )
            self._save(write)
        return write

    def list(self) -> tuple[PendingWrite, ...]:
        """Every pending write, oldest first; unreadable files are logged and skipped."""
        writes = self.pending.read_all(PendingWrite.from_json, _id)
        return tuple(sorted(writes, key=lambda w: (w.created_at, w.id)))

    def get(self, pending_id: str) -> PendingWrite:
        path = self._path(pending_id)
        try:
            return self._read(path)
        except FileNotFoundError:
            raise PendingNotFound(pending_id) from None
        except UNREADABLE as exc:
            raise ChatgateError(f"pending memory write {pending_id} is unreadable: {exc}") from exc

    def approve(self, pending_id: str) -> Decision:
        """Replay one write against fresh disk state; on refusal it stays pending.

        Raises ``PendingNotFound`` for an unknown id.
        """
        with self.pending.locked():
            write = self.get(pending_id)
            decision = self._replay(write)
            if decision.approved:
                self._path(write.id).unlink()
            elif decision.refusal != write.last_refusal:
                self._save(replace(write, last_refusal=decision.refusal))
        return decision

    def approve_all(self) -> tuple[Decision, ...]:
        """Approve every pending write, oldest first; refused ones stay pending."""
        decisions = []
        for write in self.list():
            with contextlib.suppress(PendingNotFound):  # decided meanwhile by someone else
                decisions.append(self.approve(write.id))
        return tuple(decisions)

    def reject(self, pending_id: str) -> PendingWrite:
        """Drop one pending write unapplied. Raises ``PendingNotFound`` for an unknown id."""
        with self.pending.locked():
            write = self.get(pending_id)
            self._path(write.id).unlink()
        return write

    def reject_all(self) -> tuple[PendingWrite, ...]:
        rejected = []
        for write in self.list():
            with contextlib.suppress(PendingNotFound):
                rejected.append(self.reject(write.id))
        return tuple(rejected)

    def _replay(self, write: PendingWrite) -> Decision:
        if any(op.action != "add" and op.pinned is None for op in write.operations):
            return Decision(write, refusal=UNPINNED)
        if not write.path.resolve().is_relative_to(self.memories.resolve()):
            return Decision(write, refusal=f"its file {write.path} is outside {self.memories}")
        store = MemoryStore(write.path, limit=write.limit, label=write.label)
        result = store.apply(write.operations)
        if result.refusal is not None:
            return Decision(write, result, refusal_reason(write.label, result.refusal))
        return Decision(write, result)

    def _path(self, pending_id: str) -> Path:
        path = self.pending.path(pending_id)
        if path is None:
            raise PendingNotFound(pending_id)
        return path

    def _read(self, path: Path) -> PendingWrite:
        return self.pending.read(path, PendingWrite.from_json, _id)

    def _save(self, write: PendingWrite) -> None:
        self.pending.save(write.id, write.to_json())


def _id(write: PendingWrite) -> str:
    return write.id


def refusal_reason(label: str, refusal: MemoryRefused) -> str:
    """Why a replay was refused, in a sentence for the person reviewing it."""
    if isinstance(refusal, OverLimit):
        return (
            f"{label} would be at {refusal.projected:,}/{refusal.limit:,} chars, "
            f"over the limit by {refusal.excess:,}"
        )
    return str(refusal)


def _operation_json(op: Operation) -> dict[str, Any]:
    record: dict[str, Any] = {"action": op.action, "content": op.content, "old_text": op.old_text}
    if op.action != "add":
        record["pinned_entry"] = op.pinned
    return record


def _operation_from(raw: Mapping[str, Any]) -> Operation:
    action = raw["action"]
    if action not in _ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    pinned = raw.get("pinned_entry")
    return Operation(
        action,
        content=str(raw.get("content", "")),
        old_text=str(raw.get("old_text", "")),
        pinned=None if action == "add" or pinned is None else str(pinned),
    )
