"""The curator's settings as core sees them (the gateway maps its config onto this)."""

from __future__ import annotations

from core.curator.transitions import Thresholds
from core.record import record

HOUR = 3_600.0


@record
class CuratorPolicy:
    """When a scheduled pass may run and what it does.

    ``interval_hours`` counts from the last real pass (or, before the first one, from the
    first check, which defers a fresh install's first pass one full interval);
    ``min_idle_hours`` counts from the newest inbound message in any chat.
    """

    enabled: bool = True
    interval_hours: float = 168
    min_idle_hours: float = 2
    stale_after_days: float = 30
    archive_after_days: float = 90
    consolidate: bool = False
    keep_backups: int = 5
    # Tool steps the consolidation model pass may take before it is stopped.
    consolidate_max_iterations: int = 60

    @property
    def thresholds(self) -> Thresholds:
        return Thresholds(self.stale_after_days, self.archive_after_days)

    @property
    def interval_seconds(self) -> float:
        return self.interval_hours * HOUR

    @property
    def min_idle_seconds(self) -> float:
        return self.min_idle_hours * HOUR
