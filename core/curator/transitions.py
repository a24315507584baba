"""The curator's deterministic phase: stale and archive curator-managed skills by inactivity.

Planning is pure (records, times and thresholds in, transitions out), so a dry run shows
exactly what a real pass would do. Only managed skills (``created_by: agent``, including
adopted ones) move; pinned skills and skills named by any cron job, paused or not, are
never touched. Archiving moves the folder to ``skills/.archive/[<category>/]<name>``;
nothing is ever deleted. The moves themselves are the ``SkillStore``'s, which keeps the
skills index current.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from core.errors import TransitionError
from core.record import record
from core.skills.library import SKILL_FILE, skill_folders
from core.skills.manage import find_skill
from core.skills.store import ARCHIVE, SkillStore
from core.skills.usage import SkillRecord, SkillUsage, State

DAY = 86_400.0


@record
class Thresholds:
    stale_after_days: float = 30
    archive_after_days: float = 90


@record
class LiveSkill:
    """A skill in the library with its telemetry and the last time it saw any activity."""

    name: str
    category: str | None
    folder: Path
    record: SkillRecord
    last_activity: datetime


@record
class Transition:
    name: str
    before: State
    after: State
    idle_days: float


@record
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


def apply(skills: SkillStore, transitions: Sequence[Transition], at: datetime) -> list[Transition]:
    """Carry out ``transitions``; a skill that vanished meanwhile is skipped."""
    usage = SkillUsage(skills.skills_dir)
    done = []
    for transition in transitions:
        archiving = transition.after == "archived"
        if archiving and skills.archive(transition.name, at) is None:
            continue
        usage.set_state(transition.name, transition.after, at)
        done.append(transition)
    return done


def archive_skill(skills: SkillStore, name: str, at: datetime) -> Path:
    """Archive one live skill by hand (pinned skills are refused); return its new folder."""
    usage = SkillUsage(skills.skills_dir)
    record = usage.get(name)
    if record is not None and record.pinned:
        raise TransitionError(f"{name!r} is pinned; unpin it before archiving")
    moved = skills.archive(name, at)
    if moved is None:
        raise TransitionError(f"no skill named {name!r} in the library")
    usage.set_state(name, "archived", at)
    return moved


def restore_skill(skills: SkillStore, name: str, at: datetime) -> Path:
    """Move an archived skill back into the library, active and with a fresh clock."""
    source = find_archived(skills.skills_dir, name)
    if source is None:
        raise TransitionError(f"no archived skill named {name!r}")
    if find_skill(skills.skills_dir, name) is not None:
        raise TransitionError(f"a skill named {name!r} is already in the library")
    target = skills.restore(source)
    SkillUsage(skills.skills_dir).record_restored(name, at)
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
