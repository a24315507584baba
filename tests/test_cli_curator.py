"""``chatgate curator`` through a real subprocess, in a fresh $CHATGATE_HOME."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.curator_helpers import add_skill, usage
from tests.test_cli import chatgate


def curator(*args: str) -> subprocess.CompletedProcess[str]:
    """``chatgate curator ARGS`` through the real console script."""
    return chatgate("curator", *args)


def install(home: Path) -> Path:
    skills = home / "skills"
    now = time.time()
    add_skill(skills, "busy", idle_days=1, now=now)
    add_skill(skills, "idle", idle_days=31, now=now)
    add_skill(skills, "forgotten", idle_days=100, now=now, category="ops")
    add_skill(skills, "mine", created_by="user", idle_days=200, now=now)
    add_skill(skills, "legacy", created_by=None)
    return skills


def test_status_before_any_run(home: Path) -> None:
    install(home)
    assert curator("pin", "busy").returncode == 0

    result = curator("status")

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "curator: ENABLED" in out
    assert "runs:           0" in out
    assert "last run:       never" in out
    assert "interval:       every 7d" in out
    assert "stale after:    30d unused" in out
    assert "archive after:  90d unused" in out
    assert "consolidate:    off (prune-only; LLM merge pass opt-in)" in out
    assert "curator-managed skills: 3 total  (agent-created=3  adopted=0)" in out
    assert "  active     3" in out
    assert "unmanaged (no provenance marker): 2 total" in out
    assert "pre-dates marker    1" in out
    assert "foreground-created  1" in out
    assert "pinned: busy" in out
    assert "least active:\n  mine " in out


def test_dry_run_then_real_run_then_status(home: Path) -> None:
    skills = install(home)

    dry = curator("run", "--dry-run")

    assert dry.returncode == 0, dry.stderr
    assert "forgotten: would move active → archived" in dry.stdout
    assert "idle: would move active → stale" in dry.stdout
    assert (skills / "ops" / "forgotten" / "SKILL.md").is_file()

    real = curator("run")

    assert real.returncode == 0, real.stderr
    assert "forgotten: moved active → archived" in real.stdout
    assert (skills / ".archive" / "ops" / "forgotten" / "SKILL.md").is_file()
    assert (home / "curator" / "reports" / "2.md").is_file()
    status = curator("status").stdout
    assert "runs:           1  (+1 dry run)" in status
    assert "(#2 done, manual)" in status
    assert "  stale      1" in status
    assert "  archived   1" in status


def test_rollback_restores_and_can_be_undone(home: Path) -> None:
    skills = install(home)
    assert curator("run").returncode == 0
    assert not (skills / "ops" / "forgotten").exists()

    listed = curator("rollback", "--list")
    assert listed.returncode == 0, listed.stderr
    assert "curator run 1 (manual)" in listed.stdout

    rolled = curator("rollback")

    assert rolled.returncode == 0, rolled.stderr
    assert (skills / "ops" / "forgotten" / "SKILL.md").is_file()
    assert usage(skills)["idle"]["state"] == "active"
    undo_id = rolled.stdout.split("chatgate curator rollback --id ")[1].split()[0]
    assert "pre-rollback" in curator("rollback", "--list").stdout

    undone = curator("rollback", "--id", undo_id)

    assert undone.returncode == 0, undone.stderr
    assert not (skills / "ops" / "forgotten").exists()
    assert usage(skills)["idle"]["state"] == "stale"


def test_rollback_without_or_with_an_unknown_snapshot_exits_1(home: Path) -> None:
    install(home)

    empty = curator("rollback")
    assert empty.returncode == 1
    assert "no snapshots yet" in empty.stderr
    assert curator("run").returncode == 0
    unknown = curator("rollback", "--id", "1999-01-01T00-00-00Z")
    assert unknown.returncode == 1
    assert "no snapshot '1999-01-01T00-00-00Z'" in unknown.stderr


def test_archive_restore_pin_and_adopt(home: Path) -> None:
    skills = install(home)

    assert curator("adopt", "mine").returncode == 0
    assert usage(skills)["mine"]["created_by"] == "agent"
    assert usage(skills)["mine"]["adopted"] is True
    assert curator("pin", "mine").returncode == 0
    refused = curator("archive", "mine")
    assert refused.returncode == 1
    assert "pinned" in refused.stderr
    assert curator("unpin", "mine").returncode == 0

    archived = curator("archive", "mine")
    assert archived.returncode == 0, archived.stderr
    assert (skills / ".archive" / "mine" / "SKILL.md").is_file()
    assert usage(skills)["mine"]["state"] == "archived"

    restored = curator("restore", "mine")
    assert restored.returncode == 0, restored.stderr
    assert (skills / "mine" / "SKILL.md").is_file()
    assert usage(skills)["mine"]["state"] == "active"


def test_unknown_names_exit_1_with_a_clear_error(home: Path) -> None:
    install(home)

    for command in ("pin", "unpin", "adopt", "archive", "restore"):
        result = curator(command, "nope")
        assert result.returncode == 1, command
        assert "'nope'" in result.stderr, command


def test_pause_and_resume_show_in_status(home: Path) -> None:
    assert curator("pause").returncode == 0
    assert "curator: ENABLED (paused)" in curator("status").stdout
    assert curator("resume").returncode == 0
    assert "(paused)" not in curator("status").stdout
