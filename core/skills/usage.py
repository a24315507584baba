"""Per-skill telemetry in ``skills/.usage.json``: who made a skill, how it is used, its state.

Every change reloads the file under a file lock and replaces it atomically, so several
processes can bump counters without losing each other's updates. A file that does not
parse is moved aside as ``.usage.json.corrupt-<n>`` and the telemetry starts empty.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock

from core.memory.store import write_atomically

CreatedBy = Literal["agent", "user"]
State = Literal["active", "stale", "archived"]
USAGE_FILE = ".usage.json"
_TIMES = (
    "created_at",
    "last_used_at",
    "last_viewed_at",
    "last_patched_at",
    "archived_at",
    "restored_at",
)
# Moments that count as the skill being in use, for the curator's inactivity clock.
ACTIVITY_TIMES = ("created_at", "last_used_at", "last_viewed_at", "last_patched_at", "restored_at")
_COUNTS = ("use_count", "view_count", "patch_count")


@dataclass
class SkillRecord:
    created_by: CreatedBy = "user"
    created_at: datetime | None = None
    use_count: int = 0
    view_count: int = 0
    patch_count: int = 0
    last_used_at: datetime | None = None
    last_viewed_at: datetime | None = None
    last_patched_at: datetime | None = None
    state: State = "active"
    pinned: bool = False
    archived_at: datetime | None = None
    # Set by ``adopt``: the skill was handed to the curator rather than made by the agent.
    adopted: bool = False
    # Set when an archived skill is restored, so the next pass does not archive it at once.
    restored_at: datetime | None = None
    # The umbrella skill a consolidation pass merged this one into.
    absorbed_into: str | None = None

    @property
    def managed(self) -> bool:
        """May the curator stale and archive this skill on its own?"""
        return self.created_by == "agent"

    def last_activity(self) -> datetime | None:
        """The latest moment the skill was created, used, viewed, patched or restored."""
        moments = [getattr(self, key) for key in ACTIVITY_TIMES]
        known = [moment for moment in moments if moment is not None]
        return max(known) if known else None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in _TIMES:
            value = data[key]
            data[key] = None if value is None else value.isoformat()
        return data

    @classmethod
    def from_json(cls, data: object) -> SkillRecord:
        """Tolerant: a field of the wrong type falls back to its default."""
        record = cls()
        if not isinstance(data, dict):
            return record
        for field in fields(cls):
            _load_field(record, field.name, data.get(field.name))
        return record


def _load_field(record: SkillRecord, key: str, value: object) -> None:
    if key in _TIMES and isinstance(value, str):
        try:
            setattr(record, key, datetime.fromisoformat(value))
        except ValueError:
            return
    elif key in _COUNTS and isinstance(value, int) and not isinstance(value, bool):
        setattr(record, key, max(value, 0))
    elif (
        (key == "created_by" and value in ("agent", "user"))
        or (key == "state" and value in ("active", "stale", "archived"))
        or (key in ("pinned", "adopted") and isinstance(value, bool))
        or (key == "absorbed_into" and isinstance(value, str))
    ):
        setattr(record, key, value)


class SkillUsage:
    """The telemetry store for one skills folder; times are always passed in by the caller."""

    def __init__(self, skills_dir: Path) -> None:
        self.path = skills_dir / USAGE_FILE
        self._lock = FileLock(skills_dir / f"{USAGE_FILE}.lock")

    def record_created(self, name: str, created_by: CreatedBy, at: datetime) -> None:
        def change(record: SkillRecord) -> None:
            record.created_by = created_by
            record.created_at = at

        self._update(name, change)

    def record_view(self, name: str, at: datetime) -> None:
        def change(record: SkillRecord) -> None:
            record.view_count += 1
            record.last_viewed_at = at

        self._update(name, change)

    def record_use(self, name: str, at: datetime) -> None:
        def change(record: SkillRecord) -> None:
            record.use_count += 1
            record.last_used_at = at

        self._update(name, change)

    def record_patch(self, name: str, at: datetime) -> None:
        def change(record: SkillRecord) -> None:
            record.patch_count += 1
            record.last_patched_at = at

        self._update(name, change)

    def set_pinned(self, name: str, pinned: bool) -> None:
        def change(record: SkillRecord) -> None:
            record.pinned = pinned

        self._update(name, change)

    def adopt(self, name: str) -> None:
        """Hand a skill to the curator by declaration; its inactivity clock is kept."""

        def change(record: SkillRecord) -> None:
            if record.created_by != "agent":
                record.adopted = True
            record.created_by = "agent"

        self._update(name, change)

    def set_state(self, name: str, state: State, at: datetime) -> None:
        """Record a curator transition; archiving stamps ``archived_at``, reviving clears it."""

        def change(record: SkillRecord) -> None:
            record.state = state
            record.archived_at = at if state == "archived" else None

        self._update(name, change)

    def record_restored(self, name: str, at: datetime) -> None:
        """An archived skill is back in the library: active, with a fresh inactivity clock."""

        def change(record: SkillRecord) -> None:
            record.state = "active"
            record.archived_at = None
            record.restored_at = at

        self._update(name, change)

    def set_absorbed_into(self, name: str, umbrella: str, at: datetime) -> None:
        """A consolidation merged ``name`` into ``umbrella`` and archived it."""

        def change(record: SkillRecord) -> None:
            record.absorbed_into = umbrella
            record.state = "archived"
            record.archived_at = at

        self._update(name, change)

    def get(self, name: str) -> SkillRecord | None:
        return self.all().get(name)

    def all(self) -> dict[str, SkillRecord]:
        with self._lock:
            return self._load()

    def _update(self, name: str, change: Callable[[SkillRecord], None]) -> None:
        with self._lock:
            records = self._load()
            record = records.setdefault(name, SkillRecord())
            change(record)
            payload = {key: value.to_json() for key, value in sorted(records.items())}
            write_atomically(self.path, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")

    def _load(self) -> dict[str, SkillRecord]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (ValueError, OSError):
            self._set_aside()
            return {}
        if not isinstance(data, dict):
            self._set_aside()
            return {}
        return {str(name): SkillRecord.from_json(value) for name, value in data.items()}

    def _set_aside(self) -> None:
        number = 1
        while (aside := self.path.with_name(f"{USAGE_FILE}.corrupt-{number}")).exists():
            number += 1
        os.replace(self.path, aside)
