"""The curator's deterministic phase: stale and archive curator-managed skills by inactivity.

Planning is pure (records, times and thresholds in, transitions out), so a dry run shows
exactly what a real pass would do. Only managed skills (``created_by: agent``, including
adopted ones) move; pinned skills and skills named by any cron job, paused or not, are
never touched. Archiving moves the folder to ``skills/.archive/[<category>/]<name>``;
nothing is ever deleted.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from core.errors import TransitionError
from core.skills import index
from core.skills.library import SKILL_FILE, skill_folders
from core.skills.manage import find_skill, locked_skills
from core.skills.usage import SkillRecord, SkillUsage, State

ARCHIVE = ".archive"
DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class Thresholds:
    stale_after_days: float = 30
    archive_after_days: float = 90


@dataclass(frozen=True, slots=True)
class LiveSkill:
    """A skill in the library with its telemetry and the last time it saw any activity."""

    name: str
    category: str | None
    folder: Path
    record: SkillRecord
    last_activity: datetime


@dataclass(frozen=True, slots=True)
class Transition:
    name: str
    before: State
    after: State
    idle_days: float


@dataclass(frozen=True, slots=True)
class Plan:
    transitions: tuple[Transition, ...]
    # Managed skills the pass may not move: pinned or named by a cron job.
    protected: tuple[str, ...]
    unmanaged: tuple[str, ...]


def live_skills(skills_dir: Path, records: dict[str, SkillRecord]) -> list[LiveSkill]:
    """Every skill folder; one without any recorded time counts from SKILL.md's mtime."""
    found = []
    for folder, category in skill_folders(skills_dir):
        record = records.get(folder.name, SkillRecord())
        last = record.last_activity()
        if last is None:
            last = datetime.fromtimestamp((folder / SKILL_FILE).stat().st_mtime, tz=UTC)
        found.append(LiveSkill(folder.name, category, folder, record, last))
    return found


def plan(
    skills: Iterable[LiveSkill],
    now: datetime,
    thresholds: Thresholds,
    cron_skills: Collection[str],
) -> Plan:
    """What a pass would change, given activity up to ``now``."""
    transitions: list[Transition] = []
    protected: list[str] = []
    unmanaged: list[str] = []
    for skill in skills:
        if not skill.record.managed:
            unmanaged.append(skill.name)
            continue
        if skill.record.pinned or skill.name in cron_skills:
            protected.append(skill.name)
            continue
        idle_days = (now - skill.last_activity).total_seconds() / DAY
        after = _next_state(skill.record.state, idle_days, thresholds)
        if after is not None:
            transitions.append(Transition(skill.name, skill.record.state, after, idle_days))
    return Plan(tuple(transitions), tuple(protected), tuple(unmanaged))


def _next_state(state: State, idle_days: float, thresholds: Thresholds) -> State | None:
    if idle_days >= thresholds.archive_after_days:
        return "archived"
    if idle_days >= thresholds.stale_after_days:
        return "stale" if state != "stale" else None
    # Used again (or its folder was put back by hand): it is active.
    return "active" if state != "active" else None


def apply(skills_dir: Path, transitions: Sequence[Transition], at: datetime) -> list[Transition]:
    """Carry out ``transitions``; a skill that vanished meanwhile is skipped."""
    usage = SkillUsage(skills_dir)
    done = []
    for transition in transitions:
        archiving = transition.after == "archived"
        if archiving and _move_to_archive(skills_dir, transition.name, at) is None:
            continue
        usage.set_state(transition.name, transition.after, at)
        done.append(transition)
    if any(t.after == "archived" for t in done):
        index.invalidate(skills_dir)
    return done


def archive_skill(skills_dir: Path, name: str, at: datetime) -> Path:
    """Archive one live skill by hand (pinned skills are refused); return its new folder."""
    record = SkillUsage(skills_dir).get(name)
    if record is not None and record.pinned:
        raise TransitionError(f"{name!r} is pinned; unpin it before archiving")
    moved = _move_to_archive(skills_dir, name, at)
    if moved is None:
        raise TransitionError(f"no skill named {name!r} in the library")
    SkillUsage(skills_dir).set_state(name, "archived", at)
    index.invalidate(skills_dir)
    return moved


def restore_skill(skills_dir: Path, name: str, at: datetime) -> Path:
    """Move an archived skill back into the library, active and with a fresh clock."""
    source = find_archived(skills_dir, name)
    if source is None:
        raise TransitionError(f"no archived skill named {name!r}")
    if find_skill(skills_dir, name) is not None:
        raise TransitionError(f"a skill named {name!r} is already in the library")
    category = source.parent.name if source.parent.name != ARCHIVE else None
    target = skills_dir / category / name if category else skills_dir / name
    with locked_skills(skills_dir, [name]):
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)
    SkillUsage(skills_dir).record_restored(name, at)
    index.invalidate(skills_dir)
    return target


def archived_skills(skills_dir: Path) -> list[tuple[str, str | None, Path]]:
    """Name, category and folder of every archived skill."""
    return [
        (folder.name, category, folder) for folder, category in skill_folders(_root(skills_dir))
    ]


def find_archived(skills_dir: Path, name: str) -> Path | None:
    return next((folder for n, _c, folder in archived_skills(skills_dir) if n == name), None)


def _root(skills_dir: Path) -> Path:
    return skills_dir / ARCHIVE


def _move_to_archive(skills_dir: Path, name: str, at: datetime) -> Path | None:
    with locked_skills(skills_dir, [name]):
        folder = find_skill(skills_dir, name)
        if folder is None:
            return None
        category = folder.parent.name if folder.parent != skills_dir else None
        target = _root(skills_dir) / category / name if category else _root(skills_dir) / name
        if target.exists():  # an older archived copy keeps its contents under a dated name
            os.replace(target, target.with_name(f"{name}.{at.strftime('%Y%m%dT%H%M%SZ')}"))
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(folder, target)
        return target
