"""Cron schedules: the four forms, when each fires next, and how late a missed run may start."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.cron.schedule import MAX_GRACE, MIN_GRACE, parse_schedule
from core.cron.targets import FileTarget, Origin, file_path, format_target, parse_target
from core.errors import ScheduleError, TargetError
from core.messages import ChatTarget

# Monday 2026-11-30 08:00:00 UTC
NOW = datetime(2026, 11, 30, 8, 0, tzinfo=UTC).timestamp()


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30m", 1800), ("2h", 7200), ("1d", 86400), ("90s", 90), ("15 minutes", 900)],
)
def test_a_delay_runs_once_that_long_from_now(text: str, seconds: int) -> None:
    schedule = parse_schedule(text, now=NOW)

    assert schedule.kind == "once"
    assert not schedule.recurring
    assert schedule.first_run(NOW) == NOW + seconds
    assert schedule.next_after(NOW + seconds) is None


def test_every_repeats_and_keeps_its_phase_when_run_late() -> None:
    schedule = parse_schedule("every 2h", now=NOW)

    assert schedule.kind == "interval"
    assert schedule.first_run(NOW) == NOW + 7200
    # Run 40 s late: the next run is still on the two-hour grid, not 40 s later.
    assert schedule.following(NOW + 7200, NOW + 7240) == NOW + 14400
    # Missed three periods: the next run is the first grid point after now.
    assert schedule.following(NOW, NOW + 3 * 7200 + 5) == NOW + 4 * 7200


def test_cron_expression_fires_on_the_calendar() -> None:
    schedule = parse_schedule("0 9 * * mon-fri", now=NOW)

    assert schedule.kind == "cron"
    assert schedule.first_run(NOW) == utc("2026-11-30T09:00:00")
    # Friday 09:00 -> Monday 09:00, and a fire time itself is not "after" itself.
    assert schedule.next_after(utc("2026-12-04T09:00:00")) == utc("2026-12-07T09:00:00")
    assert schedule.next_after(utc("2026-12-04T08:59:59.5")) == utc("2026-12-04T09:00:00")


def test_cron_expression_is_read_in_the_configured_zone() -> None:
    schedule = parse_schedule("0 9 * * *", now=NOW, timezone="Europe/Berlin")

    # 09:00 in Berlin (UTC+1 in winter) is 08:00 UTC, which is now: the next is tomorrow.
    assert schedule.first_run(NOW) == utc("2026-12-01T08:00:00")


def test_iso_time_runs_once_in_the_configured_zone_unless_it_has_an_offset() -> None:
    naive = parse_schedule("2026-12-24T18:00", now=NOW, timezone="Europe/Berlin")
    offset = parse_schedule("2026-12-24T18:00:00+00:00", now=NOW, timezone="Europe/Berlin")
    zulu = parse_schedule("2026-12-24T18:00Z", now=NOW)

    assert naive.kind == "once"
    assert naive.first_run(NOW) == utc("2026-12-24T17:00:00")
    assert offset.first_run(NOW) == utc("2026-12-24T18:00:00")
    assert zulu.first_run(NOW) == utc("2026-12-24T18:00:00")


def test_a_stored_iso_time_may_be_past_when_read_back() -> None:
    schedule = parse_schedule("2026-11-30T07:00", now=NOW, require_future=False)

    assert schedule.first_run(NOW) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("soon", "'every 30m'"),
        ("every 30s", "shortest interval is 1 minute"),
        ("every fortnight", "Cannot read the interval"),
        ("61 * * * *", "cron expression"),
        ("0m", "not in the future"),
        ("2026-11-30T07:00", "in the past"),
        ("* * * *", "ISO 8601"),
    ],
)
def test_unreadable_schedules_say_what_is_accepted(text: str, message: str) -> None:
    with pytest.raises(ScheduleError, match=message.replace("(", r"\(")):
        parse_schedule(text, now=NOW)


def test_unknown_zone_is_named() -> None:
    with pytest.raises(ScheduleError, match="Mars/Olympus"):
        parse_schedule("0 9 * * *", now=NOW, timezone="Mars/Olympus")


@pytest.mark.parametrize(
    ("text", "grace"),
    [
        ("every 1m", MIN_GRACE),  # half of 60 s is below the floor
        ("every 10m", 300.0),
        ("every 1h", 1800.0),
        ("every 1d", MAX_GRACE),  # half a day is above the ceiling
        ("*/20 * * * *", 600.0),
        ("30m", MAX_GRACE),  # a one-shot has no period
    ],
)
def test_grace_is_half_the_period_between_two_minutes_and_two_hours(
    text: str, grace: float
) -> None:
    schedule = parse_schedule(text, now=NOW)
    due = schedule.first_run(NOW)
    assert due is not None

    assert schedule.grace_seconds(due) == grace


@given(
    minute=st.integers(0, 59),
    hour=st.integers(0, 23),
    offset=st.floats(0, 30 * 86400, allow_nan=False),
)
def test_cron_next_run_is_strictly_later_and_on_the_expression(
    minute: int, hour: int, offset: float
) -> None:
    schedule = parse_schedule(f"{minute} {hour} * * *", now=NOW)
    t = NOW + offset

    fire = schedule.next_after(t)

    assert fire is not None
    assert t < fire <= t + 86400
    when = datetime.fromtimestamp(fire, tz=UTC)
    assert (when.hour, when.minute, when.second) == (hour, minute, 0)


# -- delivery targets ----------------------------------------------------------------


def test_targets_read_and_write_back() -> None:
    cases = {
        "origin": Origin(),
        "telegram:-100123": ChatTarget("telegram", "-100123"),
        "discord:42:7": ChatTarget("discord", "42", "7"),
        "webhook/myroute:chat-1": ChatTarget("webhook", "chat-1", None, "myroute"),
        "file:reports/daily.md": FileTarget("reports/daily.md"),
    }
    for text, target in cases.items():
        assert parse_target(text) == target
        assert format_target(target) == text
    assert parse_target("") == Origin()


@pytest.mark.parametrize("text", ["telegram", "telegram:", "a:b:c:d", "/r:1", "webhook/:c"])
def test_unreadable_targets_name_the_forms(text: str) -> None:
    with pytest.raises(TargetError, match="origin"):
        parse_target(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("telegram:1", "'origin'"),
        ("file:/etc/passwd", "absolute"),
        ("file:~/x", "absolute"),
        ("file:../state.db", r"'\.\.'"),
        ("file:a/../../b", r"'\.\.'"),
    ],
)
def test_the_model_may_only_deliver_home_or_into_the_output_folder(text: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        parse_target(text, model=True)


def test_file_paths_are_relative_to_the_output_folder(tmp_path: Path) -> None:
    home = tmp_path
    assert file_path(FileTarget("daily.md"), home) == home / "cron" / "output" / "daily.md"
    assert file_path(FileTarget("/tmp/x.md"), home) == Path("/tmp/x.md")


def _local_runs(expr: str, zone: str, start: str, count: int) -> list[str]:
    at = datetime.fromisoformat(start).timestamp()
    schedule = parse_schedule(expr, now=at, timezone=zone)
    runs = []
    for _ in range(count):
        next_at = schedule.next_after(at)
        assert next_at is not None
        at = next_at
        runs.append(datetime.fromtimestamp(at, ZoneInfo(zone)).isoformat())
    return runs


def test_a_daily_job_runs_once_when_the_clocks_go_back() -> None:
    runs = _local_runs("30 1 * * *", "America/New_York", "2026-10-31T00:00:00+00:00", 3)
    assert runs == [
        "2026-10-31T01:30:00-04:00",
        "2026-11-01T01:30:00-04:00",
        "2026-11-02T01:30:00-05:00",
    ]


def test_an_hourly_job_keeps_going_through_the_clock_changes() -> None:
    autumn = _local_runs("0 * * * *", "Europe/Berlin", "2026-10-25T00:30:00+02:00", 3)
    assert autumn == [
        "2026-10-25T01:00:00+02:00",
        "2026-10-25T02:00:00+02:00",
        "2026-10-25T03:00:00+01:00",
    ]
    spring = _local_runs("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00+00:00", 2)
    assert spring == ["2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00"]
