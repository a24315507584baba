"""What ``chatgate curator status`` shows about the library: jurisdiction, states, activity.

Managed skills are the curator's (``created_by: agent``: made by the background review, or
adopted). Unmanaged ones are split the way provenance allows: a skill with no recorded
creation pre-dates the marker (its author is unknowable), one with a recorded creation
by a person was made in the foreground.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import field
from datetime import UTC, datetime
from pathlib import Path

from core.curator.transitions import archived_skills, live_skills
from core.record import record
from core.skills.usage import SkillRecord, State

TOP = 5


@record
class SkillActivity:
    name: str
    state: State
    managed: bool
    uses: int
    views: int
    patches: int
    last_activity: datetime

    @property
    def total(self) -> int:
        return self.uses + self.views + self.patches


@record
class LibraryCounts:
    """Counts by state (managed skills) and by provenance, plus pins and activity."""

    states: dict[str, int] = field(default_factory=dict)
    agent_created: int = 0
    adopted: int = 0
    predates_marker: int = 0
    foreground_created: int = 0
    pinned: tuple[str, ...] = ()
    least_active: tuple[SkillActivity, ...] = ()
    most_active: tuple[SkillActivity, ...] = ()

    @property
    def managed(self) -> int:
        return self.agent_created + self.adopted

    @property
    def unmanaged(self) -> int:
        return self.predates_marker + self.foreground_created


def library_counts(skills_dir: Path, records: dict[str, SkillRecord]) -> LibraryCounts:
    """Live skills and archived ones; activity rankings cover live skills only."""
    live = [
        SkillActivity(
            skill.name,
            skill.record.state,
            skill.record.managed,
            skill.record.use_count,
            skill.record.view_count,
            skill.record.patch_count,
            skill.last_activity,
        )
        for skill in live_skills(skills_dir, records)
    ]
    names = [activity.name for activity in live]
    archived = [name for name, _category, _folder in archived_skills(skills_dir)]
    everything = {name: records.get(name, SkillRecord()) for name in [*names, *archived]}
    states: Counter[str] = Counter({"active": 0, "stale": 0, "archived": 0})
    for activity in live:
        if activity.managed:
            states["stale" if activity.state == "stale" else "active"] += 1
    states["archived"] += sum(1 for name in archived if everything[name].managed)
    provenance = Counter(_provenance(record) for record in everything.values())
    by_activity = sorted(live, key=lambda a: (a.last_activity, a.total, a.name))
    by_use = sorted(live, key=lambda a: (-a.total, -a.last_activity.timestamp(), a.name))
    return LibraryCounts(
        states=dict(states),
        agent_created=provenance["agent"],
        adopted=provenance["adopted"],
        predates_marker=provenance["predates"],
        foreground_created=provenance["foreground"],
        pinned=tuple(sorted(name for name in names if everything[name].pinned)),
        least_active=tuple(by_activity[:TOP]),
        most_active=tuple(a for a in by_use[:TOP] if a.total > 0),
    )


def _provenance(record: SkillRecord) -> str:
    if record.managed:
        return "adopted" if record.adopted else "agent"
    return "foreground" if record.created_at is not None else "predates"


def age(at: datetime, now: float) -> str:
    """``3d ago`` / ``5h ago`` / ``just now``: how status lines speak about times."""
    seconds = now - at.timestamp()
    if seconds < 60:
        return "just now"
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


def utc(at: float) -> datetime:
    return datetime.fromtimestamp(at, tz=UTC)
