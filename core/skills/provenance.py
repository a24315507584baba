"""Who a skill write is for: the write origin that travels with each ``skill_manage`` call.

A foreground turn writes on a person's behalf, so its skills belong to that person and
are never curated automatically. Only the background review (issue 7) writes as the
agent; it runs its tool calls inside ``write_origin("background_review")``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any, Literal

from core.skills.usage import CreatedBy, SkillUsage

WriteOrigin = Literal["foreground", "background_review"]
ORIGINS: tuple[WriteOrigin, ...] = ("foreground", "background_review")

_origin: ContextVar[WriteOrigin] = ContextVar("skill_write_origin", default="foreground")


def current_origin() -> WriteOrigin:
    return _origin.get()


@contextmanager
def write_origin(origin: WriteOrigin) -> Iterator[None]:
    """Run the enclosed skill writes (and tasks started within) under ``origin``."""
    token = _origin.set(origin)
    try:
        yield
    finally:
        _origin.reset(token)


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
