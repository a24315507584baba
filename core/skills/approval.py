"""Write approval for skills: ``skill_manage`` batches staged as files until a person decides.

Each staged batch is ``$CHATGATE_HOME/pending/skills/<id>.json`` with its operations, the
write origin it was made under and a unified diff of every file it would change. Staging
is a dry run against a temporary copy of the touched skills, so a batch that would fail is
answered with the same error as a real run and never staged. Approval replays the batch
with ``manage_skills`` against the skills as they are then (validation and rollback
included); a refused approval leaves the batch pending with the reason.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.errors import SkillRefused
from core.pending import PendingFolder
from core.skills.manage import find_skill, manage_skills
from core.skills.provenance import record_results
from core.skills.store import SkillStore
from core.skills.usage import SkillUsage
from core.skills.validate import check_name
from core.tools import WRITE_ORIGINS, WriteOrigin

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PendingSkillWrite:
    """One staged ``skill_manage`` batch."""

    id: str
    created_at: float
    origin: WriteOrigin
    operations: tuple[dict[str, Any], ...]
    skills: tuple[str, ...]
    summary: str
    diff: str
    last_refusal: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created_at": self.created_at,
            "origin": self.origin,
            "operations": list(self.operations),
            "skills": list(self.skills),
            "summary": self.summary,
            "diff": self.diff,
            "last_refusal": self.last_refusal,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PendingSkillWrite:
        """Raises ``ValueError``, ``KeyError`` or ``TypeError`` for a malformed record."""
        operations = tuple(dict(op) for op in data["operations"])
        origin = data.get("origin", "foreground")
        if not operations or origin not in WRITE_ORIGINS:
            raise ValueError("no operations or an unknown origin")
        refusal = data.get("last_refusal")
        return cls(
            id=str(data["id"]),
            created_at=float(data["created_at"]),
            origin=origin,
            operations=operations,
            skills=tuple(str(name) for name in data["skills"]),
            summary=str(data["summary"]),
            diff=str(data["diff"]),
            last_refusal=None if refusal is None else str(refusal),
        )


@dataclass(frozen=True)
class ApprovalOutcome:
    """What deciding one pending batch did; ``message`` is a sentence for the reviewer."""

    id: str
    ok: bool
    message: str


# ``SkillApprovals.list`` shadows the builtin inside the class body.
Outcomes = list[ApprovalOutcome]


class SkillApprovals:
    """The staged skill writes of one chatgate home.

    A lock file in the folder serialises staging, approving and rejecting, so one batch
    is never applied twice by two reviewers at once.
    """

    def __init__(self, home: Path, skills: SkillStore) -> None:
        """Batches wait in ``home/pending/skills``; approved ones are written to ``skills``."""
        self.skills_dir = skills.skills_dir
        self._skills = skills
        self.pending = PendingFolder(home / "pending" / "skills", "skill")
        self.folder = self.pending.folder

    def stage(self, arguments: Mapping[str, Any], origin: WriteOrigin) -> dict[str, Any]:
        """Dry-run ``arguments`` (the tool's) and stage them; the payload is the tool answer."""
        operations = arguments.get("operations", [arguments])
        with tempfile.TemporaryDirectory(prefix="skill-dry-run-") as temp:
            result, diff = _dry_run(self.skills_dir, Path(temp), operations)
        if not result.get("success"):
            return result
        names = tuple(dict.fromkeys(step["name"] for step in result["results"]))
        with self.pending.locked():
            write = PendingSkillWrite(
                self.pending.new_id(),
                self._next_time(),
                origin,
                tuple(dict(op) for op in operations),
                names,
                result["message"].replace("applied", "would apply", 1),
                diff,
            )
            self._save(write)
        return {
            "success": True,
            "staged": True,
            "pending_id": write.id,
            "message": (
                f"Staged for approval as {write.id} ({write.summary}); nothing is written "
                "until a person approves it with /skills approve."
            ),
        }

    def list(self) -> list[PendingSkillWrite]:
        """Every pending batch, oldest first; unreadable files are logged and skipped."""
        writes = self.pending.read_all(PendingSkillWrite.from_json, _id)
        return sorted(writes, key=lambda w: (w.created_at, w.id))

    def get(self, pending_id: str) -> PendingSkillWrite | None:
        path = self.pending.path(pending_id)
        if path is None:
            return None
        try:
            return self._read(path)
        except FileNotFoundError:
            return None

    def diff(self, pending_id: str) -> str:
        """The staged diff, or a sentence saying there is no such batch."""
        write = self.get(pending_id)
        if write is None:
            return _missing(pending_id)
        return write.diff or "(the batch changes no file contents)"

    def approve(self, pending_id: str) -> ApprovalOutcome:
        """Replay one batch against fresh state; a refused batch stays pending."""
        with self.pending.locked():
            write = self.get(pending_id)
            if write is None:
                return ApprovalOutcome(pending_id, ok=False, message=_missing(pending_id))
            result = self._skills.manage({"operations": list(write.operations)})
            if not result.get("success"):
                reason = str(result.get("error"))
                self._save(replace(write, last_refusal=reason))
                return ApprovalOutcome(write.id, ok=False, message=reason)
            record_results(
                SkillUsage(self.skills_dir), result["results"], write.origin, datetime.now(tz=UTC)
            )
            self.pending.file(write.id).unlink()
        return ApprovalOutcome(write.id, ok=True, message=str(result["message"]))

    def approve_all(self) -> Outcomes:
        """Approve every pending batch, oldest first; refused ones stay pending."""
        return [self.approve(write.id) for write in self.list()]

    def reject(self, pending_id: str) -> bool:
        """Drop one batch unapplied; False when there is no such batch."""
        path = self.pending.path(pending_id)
        if path is None:
            return False
        with self.pending.locked():
            try:
                path.unlink()
            except FileNotFoundError:
                return False
        return True

    def reject_all(self) -> int:
        return sum(self.reject(write.id) for write in self.list())

    def _next_time(self) -> float:
        # Strictly after every earlier batch, so "approve all" replays them in order.
        return max([time.time(), *(w.created_at + 1e-6 for w in self.list())])

    def _read(self, path: Path) -> PendingSkillWrite:
        return self.pending.read(path, PendingSkillWrite.from_json, _id)

    def _save(self, write: PendingSkillWrite) -> None:
        self.pending.save(write.id, write.to_json())


def _id(write: PendingSkillWrite) -> str:
    return write.id


def _missing(pending_id: str) -> str:
    return f"No pending skill write {pending_id!r}; see /skills pending."


def _dry_run(skills_dir: Path, scratch: Path, operations: object) -> tuple[dict[str, Any], str]:
    """Apply ``operations`` to a copy of the skills they touch; the result and its diff."""
    names = _named_skills(operations)
    before: dict[str, Path] = {}
    for name in names:
        original = find_skill(skills_dir, name)
        if original is not None:
            relative = original.relative_to(skills_dir)
            shutil.copytree(original, scratch / relative, symlinks=True)
            before[name] = original
    # The scratch copy is not the skills folder: no store, and no index to clear.
    result = manage_skills(scratch, {"operations": operations})
    if not result.get("success"):
        return result, ""
    after = {name: find_skill(scratch, name) for name in names}
    return result, _diff(skills_dir, scratch, before, after)


def _named_skills(operations: object) -> list[str]:
    if not isinstance(operations, list):
        return []
    names: list[str] = []
    for operation in operations:
        name = operation.get("name") if isinstance(operation, Mapping) else None
        if isinstance(name, str) and name not in names:
            with contextlib.suppress(SkillRefused):  # the real run reports it
                check_name(name)
                names.append(name)
    return names


def _diff(
    skills_dir: Path, scratch: Path, before: Mapping[str, Path], after: Mapping[str, Path | None]
) -> str:
    old = {path: text for folder in before.values() for path, text in _files(skills_dir, folder)}
    new = {path: text for f in after.values() if f for path, text in _files(scratch, f)}
    chunks: list[str] = []
    for path in sorted(old.keys() | new.keys()):
        a, b = old.get(path), new.get(path)
        if a == b:
            continue
        lines = difflib.unified_diff(
            (a or "").splitlines(keepends=True),
            (b or "").splitlines(keepends=True),
            fromfile=f"a/{path}" if a is not None else "/dev/null",
            tofile=f"b/{path}" if b is not None else "/dev/null",
        )
        chunks.append("".join(line if line.endswith("\n") else line + "\n" for line in lines))
    return "".join(chunks)


def _files(root: Path, folder: Path) -> Iterator[tuple[str, str]]:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            yield path.relative_to(root).as_posix(), text
