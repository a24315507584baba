"""``chatgate cron`` through the real console script, and a job it adds run by the scheduler."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from pathlib import Path

from core.clock import ManualClock
from core.cron.service import CronService
from core.messages import ChatTarget
from core.store.db import SessionDB
from tests.test_cli import chatgate
from tests.test_cron_service import Chats, Model, write_skill


def cron(*args: str) -> subprocess.CompletedProcess[str]:
    return chatgate("cron", *args)


def add(*args: str) -> str:
    """Add a job; its id."""
    result = cron("add", *args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("added ")
    return result.stdout.split()[1]


def row(home: Path, job_id: str) -> dict[str, object]:
    with sqlite3.connect(home / "state.db") as conn:
        conn.row_factory = sqlite3.Row
        found = conn.execute("SELECT * FROM cron_jobs WHERE id = ?", (job_id,)).fetchone()
    assert found is not None
    return dict(found)


def listed(home: Path) -> dict[str, str]:
    """``cron list`` rows by job id."""
    result = cron("list")
    assert result.returncode == 0, result.stderr
    return {line.split()[1]: line for line in result.stdout.splitlines() if line.startswith("│")}


def test_add_then_list_shows_the_job(home: Path) -> None:
    before = time.time()
    job_id = add(
        "--schedule", "every 2h", "--prompt", "Check the build", "--deliver", "file:build.md"
    )

    rows = listed(home)

    assert list(rows) == [job_id]
    assert "Check the build" in rows[job_id]
    assert "every 2h" in rows[job_id]
    assert "file:build.md" in rows[job_id]
    stored = row(home, job_id)
    assert stored["created_by"] == "cli"
    assert stored["origin_chat_id"] is None
    next_run = stored["next_run_at"]
    assert isinstance(next_run, float)
    assert before + 7200 <= next_run <= time.time() + 7200


def test_list_without_jobs(home: Path) -> None:
    result = cron("list")

    assert result.returncode == 0, result.stderr
    assert "no cron jobs" in result.stdout


def test_add_needs_a_delivery_target(home: Path) -> None:
    missing = cron("add", "--schedule", "1h", "--prompt", "x")
    origin = cron("add", "--schedule", "1h", "--prompt", "x", "--deliver", "origin")

    assert missing.returncode == 2
    assert missing.stderr.strip().startswith("--deliver is required")
    assert len(missing.stderr.strip().splitlines()) == 1
    assert origin.returncode == 1
    assert "no chat of origin" in origin.stderr


def test_add_refuses_what_it_cannot_use(home: Path) -> None:
    write_skill(home, "digest", "Group by topic.")

    schedule = cron("add", "--schedule", "soonish", "--prompt", "x", "--deliver", "file:x")
    skill = cron(
        "add", "--schedule", "1h", "--prompt", "x", "--deliver", "file:x", "--skill", "nope"
    )
    target = cron("add", "--schedule", "1h", "--prompt", "x", "--deliver", "telegram")

    assert schedule.returncode == 1
    assert "'every 30m'" in schedule.stderr
    assert skill.returncode == 1
    assert skill.stderr.strip() == "Unknown skill(s): nope. Available: digest."
    assert target.returncode == 1
    assert "Cannot read the delivery target 'telegram'" in target.stderr
    assert "no cron jobs" in cron("list").stdout


def test_the_shell_may_deliver_to_any_chat_or_absolute_file(home: Path, tmp_path: Path) -> None:
    write_skill(home, "digest", "Group by topic.")
    chat = add(
        "--schedule",
        "0 9 * * *",
        "--prompt",
        "x",
        "--deliver",
        "webhook/demo:chat-1:t1",
        "--skill",
        "digest",
        "--name",
        "morning",
    )
    absolute = add("--schedule", "1h", "--prompt", "x", "--deliver", f"file:{tmp_path}/o.md")

    assert row(home, chat)["deliver"] == "webhook/demo:chat-1:t1"
    assert row(home, chat)["skills"] == '["digest"]'
    assert row(home, chat)["name"] == "morning"
    assert row(home, absolute)["deliver"] == f"file:{tmp_path}/o.md"


def test_pause_resume_run_remove(home: Path) -> None:
    job_id = add("--schedule", "every 1d", "--prompt", "x", "--deliver", "file:x.md")

    paused = cron("pause", job_id)
    paused_row = listed(home)[job_id]
    resumed = cron("resume", job_id)
    before = time.time()
    ran = cron("run", job_id)
    due = row(home, job_id)["next_run_at"]
    removed = cron("remove", job_id)

    assert paused.returncode == 0, paused.stderr
    assert paused_row.rstrip(" │").endswith("yes")
    assert resumed.returncode == 0, resumed.stderr
    assert "next run" in resumed.stdout
    assert ran.returncode == 0, ran.stderr
    assert "picks it up within 30 seconds" in ran.stdout
    assert isinstance(due, float)
    assert before - 60 <= due <= time.time()
    assert removed.returncode == 0, removed.stderr
    assert listed(home) == {}


def test_unknown_job_ids_are_one_line_errors(home: Path) -> None:
    for command in ("remove", "pause", "resume", "run"):
        result = cron(command, "nope")
        assert result.returncode == 1
        assert result.stderr.strip() == "no cron job 'nope' (see chatgate cron list)"


async def test_a_job_added_in_the_shell_is_run_by_the_gateway(home: Path) -> None:
    job_id = add("--schedule", "30m", "--prompt", "Daily digest", "--deliver", "file:digest.md")
    chat_job = add("--schedule", "30m", "--prompt", "x", "--deliver", "telegram:42")
    clock = ManualClock(time.time() + 1800 + 5)
    model, chats = Model(), Chats()

    async with SessionDB(f"sqlite:///{home / 'state.db'}") as db:
        service = CronService(db, clock, model, chats, skills_dir=home / "skills", home=home)
        results = await service.tick()
        await service.aclose()

    assert sorted(r.job_id for r in results) == sorted([job_id, chat_job])
    written = (home / "cron" / "output" / "digest.md").read_text(encoding="utf-8")
    assert written.startswith(f"## Daily digest ({job_id}) at ")
    assert "report for Daily digest" in written
    assert len(chats.sent) == 1
    assert chats.sent[0][0] == ChatTarget("telegram", "42")
    assert "last status" in cron("list").stdout
    assert "finished" in listed(home)[job_id]
