"""SkillUsage: counters, timestamps, pinning, persistence, corrupt files, cross-process safety."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from core.skills.usage import SkillRecord, SkillUsage

REPO = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_unknown_skill_has_no_record(tmp_path: Path) -> None:
    usage = SkillUsage(tmp_path)
    assert usage.get("nothing") is None
    assert usage.all() == {}


def test_counters_and_timestamps(tmp_path: Path) -> None:
    usage = SkillUsage(tmp_path)
    usage.record_created("regen", "agent", T0)
    usage.record_view("regen", T0 + timedelta(hours=1))
    usage.record_view("regen", T0 + timedelta(hours=2))
    usage.record_use("regen", T0 + timedelta(hours=3))
    usage.record_patch("regen", T0 + timedelta(hours=4))
    usage.set_pinned("regen", True)
    assert usage.get("regen") == SkillRecord(
        created_by="agent",
        created_at=T0,
        use_count=1,
        view_count=2,
        patch_count=1,
        last_used_at=T0 + timedelta(hours=3),
        last_viewed_at=T0 + timedelta(hours=2),
        last_patched_at=T0 + timedelta(hours=4),
        state="active",
        pinned=True,
        archived_at=None,
    )


def test_records_persist_across_instances(tmp_path: Path) -> None:
    SkillUsage(tmp_path).record_use("regen", T0)
    SkillUsage(tmp_path).record_created("other", "user", T0)
    reloaded = SkillUsage(tmp_path).all()
    assert sorted(reloaded) == ["other", "regen"]
    assert reloaded["regen"].use_count == 1
    assert reloaded["regen"].created_by == "user"
    saved = json.loads((tmp_path / ".usage.json").read_text())
    assert saved["regen"]["last_used_at"] == T0.isoformat()
    assert saved["regen"]["state"] == "active"


def test_corrupt_file_is_kept_aside_and_treated_as_empty(tmp_path: Path) -> None:
    path = tmp_path / ".usage.json"
    path.write_text("{not json")
    usage = SkillUsage(tmp_path)
    assert usage.all() == {}
    assert (tmp_path / ".usage.json.corrupt-1").read_text() == "{not json"
    path.write_text("[1, 2]")
    usage.record_view("regen", T0)
    assert (tmp_path / ".usage.json.corrupt-2").read_text() == "[1, 2]"
    assert usage.get("regen") == SkillRecord(view_count=1, last_viewed_at=T0)


def test_bad_fields_fall_back_to_defaults(tmp_path: Path) -> None:
    entry = {
        "created_by": "robot",
        "use_count": "many",
        "view_count": True,
        "state": "gone",
        "pinned": "yes",
        "created_at": "yesterday",
        "patch_count": 3,
    }
    (tmp_path / ".usage.json").write_text(json.dumps({"regen": entry, "odd": 7}))
    usage = SkillUsage(tmp_path)
    assert usage.get("regen") == SkillRecord(patch_count=3)
    assert usage.get("odd") == SkillRecord()


_BUMPER = """
import sys
from datetime import UTC, datetime
from pathlib import Path
from core.skills.usage import SkillUsage

usage = SkillUsage(Path(sys.argv[1]))
for _ in range(int(sys.argv[2])):
    usage.record_use("regen", datetime(2026, 1, 1, tzinfo=UTC))
"""


def test_two_processes_lose_no_counts(tmp_path: Path) -> None:
    rounds = 40
    workers = [
        subprocess.Popen([sys.executable, "-c", _BUMPER, str(tmp_path), str(rounds)], cwd=REPO)
        for _ in range(2)
    ]
    assert [worker.wait(timeout=60) for worker in workers] == [0, 0]
    record = SkillUsage(tmp_path).get("regen")
    assert record is not None
    assert record.use_count == 2 * rounds
