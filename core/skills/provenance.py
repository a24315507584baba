"""Who a skill write is for: provenance from the write origin of each ``skill_manage`` call.

A foreground turn writes on a person's behalf, so its skills belong to that person and
are never curated automatically. Only the background review (issue 7) writes as the
agent; its tool calls carry ``ToolContext.origin == "background_review"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from core.skills.usage import CreatedBy, SkillUsage
from core.tools import WriteOrigin


def created_by(origin: WriteOrigin) -> CreatedBy:
    return "agent" if origin == "background_review" else "user"


def record_results(
    usage: SkillUsage, results: Sequence[Mapping[str, Any]], origin: WriteOrigin, at: datetime
) -> None:
    """Telemetry for a committed batch: creations carry their provenance, writes count."""
    for step in results:
        if step.get("action") == "create":
            usage.record_created(step["name"], created_by(origin), at)
        elif step.get("action") != "delete":
            usage.record_patch(step["name"], at)
