"""Calendar days and months in the budgets' time zone, as unix seconds."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from core.record import record


@record
class Period:
    """One day or month: its key (``2026-12-06`` / ``2026-12``), start and end."""

    key: str
    start: float
    end: float


@record
class Calendar:
    zone: ZoneInfo

    def day(self, now: float) -> Period:
        today = datetime.fromtimestamp(now, self.zone).date()
        return Period(today.isoformat(), self._midnight(today), self._midnight(_next_day(today)))

    def month(self, now: float) -> Period:
        first = datetime.fromtimestamp(now, self.zone).date().replace(day=1)
        following = (first + timedelta(days=32)).replace(day=1)
        return Period(first.isoformat()[:7], self._midnight(first), self._midnight(following))

    def shown(self, when: float) -> str:
        """``2026-12-07 00:00 UTC``: a moment as people in this zone read it."""
        return datetime.fromtimestamp(when, self.zone).strftime("%Y-%m-%d %H:%M %Z")

    def _midnight(self, day: date) -> float:
        return datetime(day.year, day.month, day.day, tzinfo=self.zone).timestamp()


def _next_day(day: date) -> date:
    return day + timedelta(days=1)
