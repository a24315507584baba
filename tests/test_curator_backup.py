"""Curator snapshots: what they hold, their ids, pruning, rollback and its undo, unsafe archives."""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
from pathlib import Path

import pytest

from core.curator.backup import ARCHIVE_NAME, PRE_ROLLBACK, SkillBackups
from core.errors import BackupError
from core.skills.index import SNAPSHOT_NAME
from core.skills.store import SkillStore

T0 = 1_780_000_000.0  # 2026-05-28T20:26:40Z


def tree(skills: Path) -> dict[str, bytes]:
    """Every file of the skills folder that a snapshot covers."""
    return {
        path.relative_to(skills).as_posix(): path.read_bytes()
        for path in sorted(skills.rglob("*"))
        if path.is_file()
        and not path.relative_to(skills).as_posix().startswith((".curator_backups", ".locks"))
        and path.name != SNAPSHOT_NAME  # the rebuildable index, rewritten after each write
        and not path.name.endswith(".lock")
    }


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    (root / "deploy" / "references").mkdir(parents=True)
    (root / "deploy" / "SKILL.md").write_text("---\nname: deploy\n---\nship\n", "utf-8")
    (root / "deploy" / "references" / "api.md").write_text("the api\n", "utf-8")
    (root / "ops" / "backup-db").mkdir(parents=True)
    (root / "ops" / "backup-db" / "SKILL.md").write_text("---\nname: backup-db\n---\n", "utf-8")
    (root / ".archive" / "old").mkdir(parents=True)
    (root / ".archive" / "old" / "SKILL.md").write_text("---\nname: old\n---\n", "utf-8")
    (root / ".usage.json").write_text('{"deploy": {"use_count": 3}}\n', "utf-8")
    (root / ".locks").mkdir()
    (root / ".locks" / "deploy.lock").write_text("", "utf-8")
    (root / ".usage.json.lock").write_text("", "utf-8")
    return root


def test_snapshot_holds_the_tree_with_a_manifest_of_checksums(skills: Path) -> None:
    backup = SkillBackups(SkillStore(skills)).snapshot("curator run 1", T0)

    assert backup.id == "2026-05-28T20-26-40Z"
    folder = skills / ".curator_backups" / backup.id
    manifest = json.loads((folder / "manifest.json").read_text("utf-8"))
    assert manifest["id"] == backup.id
    assert manifest["reason"] == "curator run 1"
    assert manifest["created_at_iso"] == "2026-05-28T20:26:40+00:00"
    listed = {entry["path"]: entry for entry in manifest["files"]}
    expected = tree(skills)
    assert set(listed) == set(expected)  # archive, usage and skills; no locks, no backups
    assert ".archive/old/SKILL.md" in listed
    for path, data in expected.items():
        assert listed[path]["size"] == len(data)
        assert listed[path]["sha256"] == hashlib.sha256(data).hexdigest()
    with tarfile.open(folder / ARCHIVE_NAME) as tar:
        assert {m.name for m in tar if m.isfile()} == set(expected)


def test_ids_are_unique_within_one_second_and_listed_oldest_first(skills: Path) -> None:
    backups = SkillBackups(SkillStore(skills))
    ids = [backups.snapshot("x", T0).id for _ in range(3)]

    assert ids == ["2026-05-28T20-26-40Z", "2026-05-28T20-26-40Z-2", "2026-05-28T20-26-40Z-3"]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ(-\d+)?", i) for i in ids)
    assert [b.id for b in backups.all()] == ids


def test_prune_keeps_the_newest(skills: Path) -> None:
    backups = SkillBackups(SkillStore(skills))
    ids = [backups.snapshot("x", T0 + hour * 3600).id for hour in range(7)]

    dropped = backups.prune(5)

    assert dropped == ids[:2]
    assert [b.id for b in backups.all()] == ids[2:]
    assert not (skills / ".curator_backups" / ids[0]).exists()


def test_rollback_restores_the_tree_and_can_itself_be_undone(skills: Path) -> None:
    backups = SkillBackups(SkillStore(skills))
    original = tree(skills)
    first = backups.snapshot("before the pass", T0)
    (skills / "deploy" / "SKILL.md").write_text("---\nname: deploy\n---\nbroken\n", "utf-8")
    (skills / "ops" / "backup-db" / "SKILL.md").unlink()
    (skills / "new-skill").mkdir()
    (skills / "new-skill" / "SKILL.md").write_text("---\nname: new-skill\n---\n", "utf-8")
    changed = tree(skills)

    before = backups.rollback(first.id, T0 + 60)

    assert tree(skills) == original
    assert not (skills / "new-skill").exists()
    assert before.reason == PRE_ROLLBACK
    assert (skills / ".locks" / "deploy.lock").exists()  # locks are left alone
    assert [b.id for b in backups.all()] == [first.id, before.id]

    backups.rollback(before.id, T0 + 120)  # undo the rollback

    assert tree(skills) == changed


def test_rollback_of_an_unknown_id_changes_nothing(skills: Path) -> None:
    backups = SkillBackups(SkillStore(skills))
    original = tree(skills)

    for bad in ("2020-01-01T00-00-00Z", "../skills", ".staging"):
        with pytest.raises(BackupError, match="no snapshot"):
            backups.rollback(bad, T0)

    assert tree(skills) == original
    assert backups.all() == []


def _forge(skills: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> str:
    """A snapshot whose archive holds ``members``, listed in a matching manifest."""
    backup = SkillBackups(SkillStore(skills)).snapshot("real", T0)
    files = []
    with tarfile.open(backup.folder / ARCHIVE_NAME, "w:gz") as tar:
        for info, data in members:
            if data is None:
                tar.addfile(info)
                continue
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            digest = hashlib.sha256(data).hexdigest()
            files.append({"path": info.name, "size": len(data), "sha256": digest})
    manifest = json.loads((backup.folder / "manifest.json").read_text("utf-8"))
    manifest["files"] = files
    (backup.folder / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    return backup.id


def _link(name: str, target: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


@pytest.mark.parametrize(
    ("member", "data", "message"),
    [
        (tarfile.TarInfo("../escape.txt"), b"x", "unsafe path"),
        (tarfile.TarInfo("/etc/evil"), b"x", "unsafe path"),
        (tarfile.TarInfo("deploy/../../escape"), b"x", "unsafe path"),
        (_link("deploy/link", "/etc/passwd", tarfile.SYMTYPE), None, "only files and folders"),
        (_link("deploy/hard", "/etc/passwd", tarfile.LNKTYPE), None, "only files and folders"),
    ],
)
def test_unsafe_archives_are_refused_before_anything_changes(
    skills: Path, member: tarfile.TarInfo, data: bytes | None, message: str
) -> None:
    backup_id = _forge(skills, [(member, data)])
    original = tree(skills)

    with pytest.raises(BackupError, match=message):
        SkillBackups(SkillStore(skills)).rollback(backup_id, T0 + 60)

    assert tree(skills) == original
    assert not (skills.parent / "escape.txt").exists()
    assert len(SkillBackups(SkillStore(skills)).all()) == 1  # no pre-rollback snapshot was taken


def test_a_damaged_snapshot_is_refused(skills: Path) -> None:
    backups = SkillBackups(SkillStore(skills))
    backup = backups.snapshot("real", T0)
    manifest_path = backup.folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text("utf-8"))
    manifest["files"][0]["sha256"] = "0" * 64
    manifest_path.write_text(json.dumps(manifest), "utf-8")
    original = tree(skills)

    with pytest.raises(BackupError, match="checksum"):
        backups.rollback(backup.id, T0 + 60)

    assert tree(skills) == original
