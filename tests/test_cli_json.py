"""``--json`` on the listing commands, parsed; and tables that keep ids whole when narrow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.memory.approval import PendingWrites
from core.memory.profile import MemoryFiles, MemoryLimits
from core.memory.tool import memory_tool_call
from tests.test_cli import chatgate, cli_env
from tests.test_cli_sessions import seeded
from tests.test_cli_skills import stage_create

LONG_ID = "sess-0123456789abcdef0123456789abcdef"


def as_json(*args: str) -> Any:
    result = chatgate(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def add_job(name: str) -> str:
    added = chatgate(
        "cron",
        "add",
        "--schedule",
        "every 2h",
        "--prompt",
        "p",
        "--deliver",
        "file:/tmp/x",
        "--name",
        name,
    )
    assert added.returncode == 0, added.stderr
    return added.stdout.split()[1]


def test_sessions_list_json(home: Path) -> None:
    seeded(home, [(LONG_ID, ["hello", "hi"])], [("second", ["more"])])

    rows = as_json("sessions", "list")

    assert [row["id"] for row in rows] == ["second", LONG_ID]  # most recent first
    first = rows[1]
    assert first["key"] == f"webhook:c1:{LONG_ID}"
    assert first["platform"] == "webhook"
    assert first["started_at"].endswith("Z")
    assert first["end_reason"] is None


def test_cron_list_and_status_json(home: Path) -> None:
    job_id = add_job("nightly")

    (job,) = as_json("cron", "list")
    status = as_json("status")

    assert job["id"] == job_id
    assert job["name"] == "nightly"
    assert job["paused"] is False
    assert job["next_run_at"].endswith("Z")
    assert status["model"] == {"name": "offline", "provider": "offline"}
    assert status["sessions"]["active"] == 0
    by_job = {line["job"]: line for line in status["scheduler_jobs"]}
    assert by_job[f"cron {job_id}"]["next_run"] == job["next_run_at"]
    assert by_job["cron jobs"]["next_run"] == "at each look"


def test_empty_listings_are_empty_json_arrays(home: Path) -> None:
    for command in (("cron", "list"), ("memory", "pending"), ("skills", "pending")):
        assert as_json(*command) == [], command


def test_skills_and_memory_pending_json(home: Path) -> None:
    pending_id = stage_create(home, "staged")
    files = MemoryFiles(home, MemoryLimits(memory_chars=200, user_chars=120))
    staged = memory_tool_call(
        {"target": "memory", "action": "add", "content": "Deploys on Fridays"},
        files.stores_for("webhook", "u1"),
        PendingWrites(home),
    )

    (skill_write,) = as_json("skills", "pending")
    (memory_write,) = as_json("memory", "pending")

    assert skill_write["id"] == pending_id
    assert skill_write["skills"] == ["staged"]
    assert memory_write["id"] == staged["pending_id"]
    assert memory_write["operations"][0]["action"] == "add"
    assert memory_write["operations"][0]["content"] == "Deploys on Fridays"


def first_cells(table: str) -> str:
    """The first column's text of a rich table's body, its lines joined."""
    rows = [line for line in table.splitlines() if line.startswith("│")]
    return "".join(line.split("│")[1].strip() for line in rows)


def test_narrow_tables_keep_ids_whole(home: Path) -> None:
    seeded(home, [(LONG_ID, ["hello"])])
    job_id = add_job("a-rather-long-job-name")
    narrow = cli_env(COLUMNS="40")

    sessions = chatgate("sessions", "list", env=narrow)
    jobs = chatgate("cron", "list", env=narrow)

    assert sessions.returncode == 0, sessions.stderr
    assert first_cells(sessions.stdout) == LONG_ID  # on one line, as the next command needs
    assert job_id in jobs.stdout
    assert first_cells(jobs.stdout) == job_id
