"""``chatgate skills doctor``: why each installed skill is or is not visible to the model."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from core.skills.library import Skill, load_library

Status = Literal["visible", "hidden", "broken"]


@dataclass(frozen=True)
class DoctorLine:
    name: str
    category: str | None
    status: Status
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def label(self) -> str:
        return self.name if self.category is None else f"{self.category}/{self.name}"


def diagnose(
    skills_dir: Path,
    platform: str,
    enabled_tools: Collection[str],
    disabled: Collection[str] = (),
) -> list[DoctorLine]:
    library = load_library(
        skills_dir, platform=platform, enabled_tools=enabled_tools, disabled=disabled
    )
    return [_line(skill) for skill in library.skills]


def _line(skill: Skill) -> DoctorLine:
    status: Status = "visible"
    if skill.hidden_reason is not None:
        status = "hidden"
    elif skill.problems:
        status = "broken"
    hidden = () if skill.hidden_reason is None else (skill.hidden_reason,)
    return DoctorLine(
        skill.name, skill.category, status, (*hidden, *skill.problems), tuple(skill.warnings)
    )


def format_report(lines: Sequence[DoctorLine]) -> str:
    if not lines:
        return "no skills installed\n"
    counts = {status: sum(line.status == status for line in lines) for status in _STATUSES}
    summary = ", ".join(f"{count} {status}" for status, count in counts.items())
    out = [f"{len(lines)} skills: {summary}"]
    for line in lines:
        reasons = f" ({'; '.join(line.reasons)})" if line.reasons else ""
        out.append(f"{line.status:<8} {line.label}{reasons}")
        out.extend(f"         warning: {warning}" for warning in line.warnings)
    return "\n".join(out) + "\n"


_STATUSES: tuple[Status, ...] = ("visible", "hidden", "broken")
