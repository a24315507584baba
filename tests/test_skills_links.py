"""skill_manage never writes through a symbolic link inside the skills tree."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from core.skills.manage import apply_operations


def skill_md(name: str, body: str = "Step one.") -> str:
    return f"---\nname: {name}\ndescription: A skill\n---\n# {name}\n\n{body}\n"


def files(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def run(skills: Path, *operations: dict[str, Any]) -> dict[str, Any]:
    return apply_operations(skills, list(operations))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    (folder / "evil").mkdir(parents=True)
    (folder / "evil" / "SKILL.md").write_text(skill_md("evil"), encoding="utf-8")
    (folder / "target.md").write_text("outside", encoding="utf-8")
    return folder


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "home" / "skills"
    root.mkdir(parents=True)
    created = run(root, {"action": "create", "name": "regen", "content": skill_md("regen")})
    assert created["success"] is True
    return root


def assert_refused_for_a_link(
    payload: dict[str, Any], outside: Path, before: dict[str, bytes]
) -> None:
    assert payload["success"] is False
    assert "[rule: path_symlink]" in payload["error"]
    assert "link" in payload["error"]
    assert files(outside) == before


@pytest.mark.parametrize(
    "operation",
    [
        {"action": "edit", "name": "evil", "content": skill_md("evil", "Now mine.")},
        {"action": "patch", "name": "evil", "old_string": "Step one.", "new_string": "Mine."},
        {"action": "write_file", "name": "evil", "file_path": "scripts/x.sh", "file_content": "x"},
        {"action": "delete", "name": "evil"},
    ],
)
def test_a_skill_folder_linked_outside_is_never_written(
    skills: Path, outside: Path, operation: dict[str, Any]
) -> None:
    os.symlink(outside / "evil", skills / "evil")
    before = files(outside)
    assert_refused_for_a_link(run(skills, operation), outside, before)
    assert not (outside / "evil" / "scripts").exists()


def test_a_linked_file_is_neither_patched_nor_replaced(skills: Path, outside: Path) -> None:
    references = skills / "regen" / "references"
    references.mkdir()
    os.symlink(outside / "target.md", references / "notes.md")
    os.symlink(outside / "target.md", skills / "regen" / "templates")
    before = files(outside)
    write = {"action": "write_file", "name": "regen", "file_path": "references/notes.md"}
    patch = {"action": "patch", "name": "regen", "file_path": "references/notes.md"}
    assert_refused_for_a_link(run(skills, {**write, "file_content": "x"}), outside, before)
    patch_op = {**patch, "old_string": "outside", "new_string": "mine"}
    assert_refused_for_a_link(run(skills, patch_op), outside, before)
    assert (references / "notes.md").is_symlink()


def test_a_linked_skill_md_is_not_edited(skills: Path, outside: Path) -> None:
    skill_file = skills / "regen" / "SKILL.md"
    skill_file.unlink()
    os.symlink(outside / "evil" / "SKILL.md", skill_file)
    before = files(outside)
    edit = {"action": "edit", "name": "regen", "content": skill_md("regen", "Mine.")}
    assert_refused_for_a_link(run(skills, edit), outside, before)


def test_a_linked_category_or_nested_folder_is_not_written_through(
    skills: Path, outside: Path
) -> None:
    (outside / "cat").mkdir()
    os.symlink(outside / "cat", skills / "devops")
    nested = outside / "deep"
    nested.mkdir()
    (skills / "regen" / "scripts").mkdir()
    os.symlink(nested, skills / "regen" / "scripts" / "lib")
    before = files(outside)
    create = {"action": "create", "name": "fresh", "category": "devops"}
    assert_refused_for_a_link(
        run(skills, {**create, "content": skill_md("fresh")}), outside, before
    )
    write = {"action": "write_file", "name": "regen", "file_path": "scripts/lib/a.sh"}
    assert_refused_for_a_link(run(skills, {**write, "file_content": "x"}), outside, before)
    assert list((outside / "cat").iterdir()) == []
    assert list(nested.iterdir()) == []


def test_ordinary_writes_still_work_and_the_root_may_be_a_link(
    skills: Path, tmp_path: Path
) -> None:
    linked_root = tmp_path / "linked-skills"
    os.symlink(skills, linked_root)
    payload = run(
        linked_root,
        {"action": "create", "name": "fresh", "category": "ops", "content": skill_md("fresh")},
        {"action": "edit", "name": "regen", "content": skill_md("regen", "Step two.")},
        {
            "action": "write_file",
            "name": "regen",
            "file_path": "references/a/b.md",
            "file_content": "b",
        },
        {"action": "remove_file", "name": "regen", "file_path": "references/a/b.md"},
    )
    assert payload["success"] is True, payload
    assert "Step two." in (skills / "regen" / "SKILL.md").read_text(encoding="utf-8")
    assert (skills / "ops" / "fresh" / "SKILL.md").is_file()
    assert not (skills / "regen" / "references" / "a" / "b.md").exists()


def test_removing_a_file_inside_a_linked_folder_is_refused(skills: Path, outside: Path) -> None:
    os.symlink(outside, skills / "regen" / "assets")
    before = files(outside)
    remove = {"action": "remove_file", "name": "regen", "file_path": "assets/target.md"}
    assert_refused_for_a_link(run(skills, remove), outside, before)
