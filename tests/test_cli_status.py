"""``chatgate status`` through the real console script."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli import chatgate


def test_status_lists_the_scheduler_jobs_and_the_next_cron_runs(home: Path) -> None:
    added = chatgate(
        "cron",
        "add",
        "--schedule",
        "every 2h",
        "--prompt",
        "check the build",
        "--deliver",
        "file:build.log",
    )
    assert added.returncode == 0, added.stderr

    result = chatgate("status")

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "offline via offline" in out
    for job in ("background review", "cron jobs", "curator check"):
        assert job in out
    assert "every 2h" in out
    assert "check the build" in out


def test_status_says_when_scheduled_work_is_switched_off(home: Path) -> None:
    (home / "config.yaml").write_text("curator:\n  enabled: false\nreview:\n  enabled: false\n")

    result = chatgate("status")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any("background review" in line and "disabled" in line for line in lines)
    assert any("curator check" in line and "disabled" in line for line in lines)
