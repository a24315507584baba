"""The skill store: every write it makes shows in its next index, read once before the write."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from core.skills.index import SNAPSHOT_NAME
from core.skills.store import SkillStore
from tests.test_skills_library import simple, write_skill

TOOLS = ("skill_view",)
AT = datetime(2026, 5, 28, 20, 26, 40, tzinfo=UTC)


def skill_md(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\nSteps.\n"


def create(name: str, description: str) -> dict[str, Any]:
    return {"action": "create", "name": name, "content": skill_md(name, description)}


@pytest.fixture
def store(tmp_path: Path) -> SkillStore:
    skills = tmp_path / "skills"
    write_skill(skills, "ops/deploy", simple("deploy", "Ship the service"))
    store = SkillStore(skills)
    assert "- deploy: Ship the service" in store.index("webhook", TOOLS)  # now cached
    return store


def test_a_batch_shows_in_the_next_index(store: SkillStore) -> None:
    patch = {
        "action": "patch",
        "name": "deploy",
        "old_string": "Ship the service",
        "new_string": "Ship it",
    }
    result = store.manage({"operations": [create("triage", "Sort the inbox"), patch]})

    assert result["success"] is True, result
    text = store.index("webhook", TOOLS)
    assert "- triage: Sort the inbox" in text
    assert "- deploy: Ship it\n" in text
    assert store.manage({"action": "delete", "name": "triage"})["success"] is True
    assert "triage" not in store.index("webhook", TOOLS)


def test_a_refused_batch_writes_nothing(store: SkillStore) -> None:
    before = store.index("webhook", TOOLS)
    result = store.manage({"operations": [create("triage", "Sort"), create("deploy", "Again")]})

    assert result["success"] is False
    assert not (store.skills_dir / "triage").exists()
    assert store.index("webhook", TOOLS) == before


def test_archive_and_restore_show_in_the_next_index(store: SkillStore) -> None:
    archived = store.archive("deploy", AT)

    assert archived == store.skills_dir / ".archive" / "ops" / "deploy"
    assert "deploy" not in store.index("webhook", TOOLS)
    assert store.archive("deploy", AT) is None  # nothing left to archive

    restored = store.restore(archived)

    assert restored == store.skills_dir / "ops" / "deploy"
    assert "- deploy: Ship the service" in store.index("webhook", TOOLS)


def test_archiving_a_name_again_keeps_the_older_copy(store: SkillStore) -> None:
    first = store.archive("deploy", AT)
    assert first is not None
    write_skill(store.skills_dir, "ops/deploy", simple("deploy", "A new one"))

    second = store.archive("deploy", AT)

    assert second == first
    assert "A new one" in (second / "SKILL.md").read_text("utf-8")
    older = first.with_name("deploy.20260528T202640Z") / "SKILL.md"
    assert "Ship the service" in older.read_text("utf-8")


def test_a_swapped_in_tree_shows_in_the_next_index(store: SkillStore, tmp_path: Path) -> None:
    replacement = tmp_path / "tree"
    write_skill(replacement, "triage", simple("triage", "Sort the inbox"))
    current = [path for path in store.skills_dir.iterdir() if not path.name.startswith(".")]

    store.replace_entries(current, replacement, tmp_path / "aside")

    assert (tmp_path / "aside" / "ops" / "deploy" / "SKILL.md").is_file()
    text = store.index("webhook", TOOLS)
    assert "- triage: Sort the inbox" in text
    assert "deploy" not in text


def test_a_write_keeps_the_disk_snapshot_current_for_a_new_process(store: SkillStore) -> None:
    assert (store.skills_dir / SNAPSHOT_NAME).is_file()

    store.manage({"operations": [create("triage", "Sort the inbox")]})

    snapshot = json.loads((store.skills_dir / SNAPSHOT_NAME).read_text(encoding="utf-8"))
    assert any("- triage: Sort the inbox" in text for text in snapshot["indexes"].values())
    assert "triage/SKILL.md" in snapshot["manifest"]
    assert "- triage: Sort the inbox" in SkillStore(store.skills_dir).index("webhook", TOOLS)
