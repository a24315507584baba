"""Cron schedules: the four forms a person (or the model) may write, and when each fires.

``30m`` runs once, that long after the job is made; ``every 2h`` repeats; a five-field
cron expression repeats on the calendar (read in the configured zone); an ISO 8601 time
runs once at that moment. Times are unix seconds so every decision reads the injected clock.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger

from core.errors import ScheduleError

ScheduleKind = Literal["once", "interval", "cron"]

MIN_INTERVAL = 60.0
MIN_GRACE = 120.0
MAX_GRACE = 7200.0
# A one-shot job has no period to halve: it keeps the widest window.
ONCE_GRACE = MAX_GRACE

FORMS = (
    "a delay that runs once ('30m', '2h', '1d', '90s'), "
    "a repeating interval ('every 30m', 'every 2h'), "
    "a five-field cron expression ('0 9 * * mon-fri') "
    "or an ISO 8601 time ('2026-12-24T18:00', '2026-12-24T18:00:00+01:00')"
)

_UNITS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
}
_DURATION = re.compile(r"^(\d+)\s*([a-z]+)$")
_EVERY = re.compile(r"^every\s+(.+)$")


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule. ``at`` is the fire time of a one-shot, ``every`` an interval."""

    kind: ScheduleKind
    text: str
    at: float | None = None
    every: float | None = None
    trigger: CronTrigger | None = None

    @property
    def recurring(self) -> bool:
        return self.kind != "once"

    def first_run(self, now: float) -> float | None:
        """When a job made (or resumed) at ``now`` first runs; None if a one-shot is past."""
        if self.kind == "once":
            assert self.at is not None
            return self.at if self.at > now else None
        return self.next_after(now)

    def next_after(self, t: float) -> float | None:
        """The first fire time strictly after ``t``; None for a one-shot."""
        if self.kind == "interval":
            assert self.every is not None
            return t + self.every
        if self.kind == "cron":
            return self._cron_after(t)
        return None

    def following(self, scheduled_for: float, now: float) -> float | None:
        """The next fire time after ``now`` for a run that was due at ``scheduled_for``.

        Intervals keep their phase (``scheduled_for`` plus whole periods), so a tick that
        runs a job a little late does not make every later run late too.
        """
        if self.kind == "interval":
            assert self.every is not None
            periods = max(1, math.floor((now - scheduled_for) / self.every) + 1)
            return scheduled_for + periods * self.every
        return self.next_after(now)

    def grace_seconds(self, scheduled_for: float) -> float:
        """How late a run due at ``scheduled_for`` may still start: half the period, clamped."""
        if self.kind == "once":
            return ONCE_GRACE
        following = self.next_after(scheduled_for)
        period = (following - scheduled_for) if following is not None else 2 * MAX_GRACE
        return min(MAX_GRACE, max(MIN_GRACE, period / 2))

    def _cron_after(self, t: float) -> float:
        assert self.trigger is not None
        zone = self.trigger.timezone
        start = datetime.fromtimestamp(t, tz=zone)
        # Step in real seconds, never in wall-clock ones: around a daylight-saving change
        # a wall-clock step can land on the same instant again and loop for ever.
        for _ in range(_MAX_STEPS):
            fire = self.trigger.get_next_fire_time(None, start)
            if fire is None:  # pragma: no cover - a crontab trigger has no end date
                raise ScheduleError(f"{self.text!r} never fires again")
            # When clocks go back a wall time happens twice; like cron, run it once.
            repeated = fire.replace(tzinfo=None) == datetime.fromtimestamp(t, tz=zone).replace(
                tzinfo=None
            )
            if fire.timestamp() > t and not repeated:
                return float(fire.timestamp())
            start = datetime.fromtimestamp(max(fire.timestamp(), start.timestamp()) + 1, tz=zone)
        raise ScheduleError(f"{self.text!r}: no next run time found")


_MAX_STEPS = 1000


def parse_schedule(
    text: str, *, now: float, timezone: str = "UTC", require_future: bool = True
) -> Schedule:
    """Parse ``text``; ``now`` anchors a delay, ``timezone`` reads crons and naive ISO times.

    A stored job's schedule is re-read with ``require_future=False``: its one-shot time
    may have passed by then. Raises ``ScheduleError`` with a message a person can act on.
    """
    cleaned = " ".join(text.strip().split())
    if not cleaned:
        raise ScheduleError(f"The schedule is empty. Use {FORMS}.")
    zone = _zone(timezone)
    lowered = cleaned.lower()
    every = _EVERY.match(lowered)
    if every:
        seconds = _duration(every.group(1))
        if seconds is None:
            raise ScheduleError(f"Cannot read the interval in {text!r}. Use {FORMS}.")
        if seconds < MIN_INTERVAL:
            raise ScheduleError(f"{text!r} repeats too often: the shortest interval is 1 minute.")
        return Schedule("interval", cleaned, every=float(seconds))
    delay = _duration(lowered)
    if delay is not None:
        if delay <= 0:
            raise ScheduleError(f"{text!r} is not in the future. Use {FORMS}.")
        return Schedule("once", cleaned, at=now + delay)
    if len(cleaned.split(" ")) == 5:
        return _cron(cleaned, zone)
    return _iso(cleaned, zone, now if require_future else None)


def _duration(text: str) -> int | None:
    match = _DURATION.match(text.strip())
    if not match or match.group(2) not in _UNITS:
        return None
    return int(match.group(1)) * _UNITS[match.group(2)]


def check_timezone(name: str) -> None:
    """Raise ``ScheduleError`` for a zone name that cannot be used (cron.timezone)."""
    _zone(name)


def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError(f"Unknown time zone {name!r} (cron.timezone).") from exc


def _cron(text: str, zone: tzinfo) -> Schedule:
    try:
        trigger = CronTrigger.from_crontab(text, timezone=zone)
    except ValueError as exc:
        raise ScheduleError(f"Cannot read the cron expression {text!r}: {exc}.") from exc
    return Schedule("cron", text, trigger=trigger)


def _iso(text: str, zone: tzinfo, now: float | None) -> Schedule:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ScheduleError(f"Cannot read the schedule {text!r}. Use {FORMS}.") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=zone)
    at = when.timestamp()
    if now is not None and at <= now:
        raise ScheduleError(f"{text!r} is in the past; give a time in the future.")
    return Schedule("once", text, at=at)
