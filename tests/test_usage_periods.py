"""Budget days and months in the configured zone, and the settings that name them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from core.errors import ConfigError
from core.usage.periods import Calendar
from gateway.config import load_settings


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_a_day_that_springs_forward_is_23_hours_long_and_starts_at_local_midnight() -> None:
    berlin = Calendar(ZoneInfo("Europe/Berlin"))

    day = berlin.day(at("2026-03-28T23:30:00"))  # 00:30 on the 29th in Berlin

    assert day.key == "2026-03-29"
    assert day.start == at("2026-03-28T23:00:00")
    assert day.end == at("2026-03-29T22:00:00")
    assert berlin.shown(day.end) == "2026-03-30 00:00 CEST"


def test_a_month_runs_from_the_first_to_the_first_of_the_next_in_the_zone() -> None:
    tokyo = Calendar(ZoneInfo("Asia/Tokyo"))

    month = tokyo.month(at("2026-12-31T16:00:00"))  # already January 1st in Tokyo

    assert month.key == "2027-01"
    assert month.start == at("2026-12-31T15:00:00")
    assert month.end == at("2027-01-31T15:00:00")


def test_an_unknown_zone_and_a_negative_limit_are_config_errors(home: Path) -> None:
    (home / "config.yaml").write_text("budgets:\n  timezone: Mars/Olympus\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="budgets.timezone"):
        load_settings(home, {})
    (home / "config.yaml").write_text(
        "budgets:\n  per_chat: {daily_tokens: -1}\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="budgets.per_chat"):
        load_settings(home, {})


def test_global_is_the_key_and_the_variable(home: Path) -> None:
    (home / "config.yaml").write_text("budgets:\n  global: {daily_tokens: 7}\n", encoding="utf-8")
    from_file = load_settings(home, {})
    from_env = load_settings(home, {"CHATGATE_BUDGETS__GLOBAL": '{"monthly_cost": 2.5}'})

    assert from_file.budgets.global_.daily_tokens == 7
    assert from_env.budgets.global_.monthly_cost == 2.5
    assert from_env.budgets.global_.daily_tokens is None  # the variable replaces the key
