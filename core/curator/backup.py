"""Snapshots of the skills folder, so every curator pass (and every rollback) can be undone.

A snapshot is ``skills/.curator_backups/<id>/skills.tar.gz`` plus ``manifest.json`` (id,
time, reason, and the size and sha256 of every file). Ids are UTC times such as
``2026-11-30T07-05-00Z`` (``-2``, ``-3`` … when one second holds several). A rollback first
snapshots the current tree (reason ``pre-rollback``), so a mistaken rollback is itself
reversible. Extraction trusts nothing in the archive: absolute paths, ``..``, links and
special files are refused, and every file must match the manifest's checksum. The swap
itself is the ``SkillStore``'s, which keeps the skills index current.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from filelock import FileLock

from core.errors import BackupError
from core.record import record
from core.skills.store import SkillStore
from core.skills.usage import USAGE_FILE

BACKUPS = ".curator_backups"
ARCHIVE_NAME = "skills.tar.gz"
MANIFEST_NAME = "manifest.json"
PRE_ROLLBACK = "pre-rollback"
# Never part of a snapshot: the snapshots themselves, lock files and the rebuildable index.
_SKIP_TOP = frozenset({BACKUPS, ".locks", ".skills_prompt_snapshot.json"})
_SKIP_SUFFIX = ".lock"


@record
class BackupFile:
    path: str
    size: int
    sha256: str


@record
class Backup:
    """One snapshot as its manifest describes it."""

    id: str
    created_at: float
    reason: str
    files: tuple[BackupFile, ...]
    folder: Path

    @property
    def size(self) -> int:
        return sum(file.size for file in self.files)


class SkillBackups:
    """Snapshots of one store's skills folder; a rollback writes through the store."""

    def __init__(self, skills: SkillStore) -> None:
        self.skills_dir = skills.skills_dir
        self.root = self.skills_dir / BACKUPS
        self._skills = skills

    def snapshot(self, reason: str, at: float) -> Backup:
        """Archive the current tree (every file except the skipped ones) under a new id."""
        self.root.mkdir(parents=True, exist_ok=True)
        backup_id = self._new_id(at)
        folder = self.root / backup_id
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=self.root))
        try:
            files = self._write_archive(staging / ARCHIVE_NAME)
            manifest = {
                "id": backup_id,
                "created_at": at,
                "created_at_iso": _iso(at),
                "reason": reason,
                "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in files],
            }
            (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
            os.replace(staging, folder)  # the snapshot appears whole or not at all
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return Backup(backup_id, at, reason, tuple(files), folder)

    def all(self) -> list[Backup]:
        """Every readable snapshot, oldest first."""
        if not self.root.is_dir():
            return []
        found = []
        for folder in self.root.iterdir():
            if folder.is_dir() and not folder.name.startswith("."):
                try:
                    found.append(_read_manifest(folder))
                except BackupError:
                    continue
        return sorted(found, key=lambda backup: (backup.created_at, _id_order(backup.id)))

    def get(self, backup_id: str) -> Backup:
        folder = self.root / backup_id
        if "/" in backup_id or backup_id.startswith(".") or not folder.is_dir():
            raise BackupError(f"no snapshot {backup_id!r} (see chatgate curator rollback --list)")
        return _read_manifest(folder)

    def prune(self, keep: int, protect: frozenset[str] = frozenset()) -> list[str]:
        """Drop the oldest snapshots beyond ``keep`` (never one in ``protect``)."""
        backups = self.all()
        excess = max(len(backups) - keep, 0)
        dropped: list[str] = []
        for backup in backups:
            if len(dropped) >= excess:
                break
            if backup.id in protect:
                continue
            shutil.rmtree(backup.folder)
            dropped.append(backup.id)
        return dropped

    def rollback(self, backup_id: str, at: float) -> Backup:
        """Replace the tree with snapshot ``backup_id``; return the pre-rollback snapshot."""
        target = self.get(backup_id)
        with tempfile.TemporaryDirectory(prefix=".restore-", dir=self.root) as temp:
            extracted = Path(temp) / "tree"
            _extract_verified(target, extracted)
            # Telemetry writers wait while .usage.json is swapped, so no bump is lost midway.
            with FileLock(self.skills_dir / f"{USAGE_FILE}.lock"):
                before = self.snapshot(PRE_ROLLBACK, at)
                self._skills.replace_entries(self._kept_entries(), extracted, Path(temp) / "old")
        return before

    def _new_id(self, at: float) -> str:
        base = datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%dT%H-%M-%SZ")
        candidate, number = base, 1
        while (self.root / candidate).exists():
            number += 1
            candidate = f"{base}-{number}"
        return candidate

    def _write_archive(self, path: Path) -> list[BackupFile]:
        files = []
        with tarfile.open(path, "w:gz") as tar:
            for source, relative in self._tree():
                if source.is_dir():
                    tar.addfile(_dir_info(relative))
                    continue
                data = source.read_bytes()
                info = tarfile.TarInfo(relative)
                info.size = len(data)
                info.mtime = int(source.stat().st_mtime)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
                files.append(BackupFile(relative, len(data), hashlib.sha256(data).hexdigest()))
        return files

    def _tree(self) -> Iterator[tuple[Path, str]]:
        """Directories and regular files to keep; links are not followed or kept."""
        for top in sorted(self._kept_entries()):
            if top.is_symlink():
                continue
            if top.is_file():
                yield top, top.name
                continue
            yield top, top.name
            for path in sorted(top.rglob("*")):
                if path.is_symlink() or not (path.is_dir() or path.is_file()):
                    continue
                if path.name.endswith(_SKIP_SUFFIX):
                    continue
                yield path, path.relative_to(self.skills_dir).as_posix()

    def _kept_entries(self) -> list[Path]:
        if not self.skills_dir.is_dir():
            return []
        return [
            entry
            for entry in self.skills_dir.iterdir()
            if entry.name not in _SKIP_TOP and not entry.name.endswith(_SKIP_SUFFIX)
        ]


def _dir_info(relative: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(relative)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    return info


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, tz=UTC).isoformat()


def _id_order(backup_id: str) -> int:
    head, _, tail = backup_id.rpartition("Z-")
    return int(tail) if head and tail.isdigit() else 1


def _read_manifest(folder: Path) -> Backup:
    try:
        data: Any = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
        files = tuple(
            BackupFile(str(f["path"]), int(f["size"]), str(f["sha256"])) for f in data["files"]
        )
        return Backup(
            str(data["id"]), float(data["created_at"]), str(data["reason"]), files, folder
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BackupError(f"snapshot {folder.name!r} has no readable manifest: {exc}") from exc


def _safe_member(member: tarfile.TarInfo) -> PurePosixPath:
    path = PurePosixPath(member.name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise BackupError(f"refusing unsafe path {member.name!r} in the snapshot")
    if not (member.isfile() or member.isdir()):
        raise BackupError(f"refusing {member.name!r}: only files and folders are restored")
    return path


def _extract_verified(backup: Backup, into: Path) -> None:
    """Extract into an empty folder, checking every member and every checksum."""
    expected = {file.path: file for file in backup.files}
    into.mkdir(parents=True)
    seen: set[str] = set()
    try:
        with tarfile.open(backup.folder / ARCHIVE_NAME, "r:gz") as tar:
            for member in tar:
                path = _safe_member(member)
                target = into.joinpath(*path.parts)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                _extract_file(tar, member, target, expected)
                seen.add(path.as_posix())
    except (OSError, tarfile.TarError) as exc:
        raise BackupError(f"snapshot {backup.id!r} cannot be read: {exc}") from exc
    missing = sorted(set(expected) - seen)
    if missing:
        raise BackupError(f"snapshot {backup.id!r} is missing {', '.join(missing[:5])}")


def _extract_file(
    tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path, expected: dict[str, BackupFile]
) -> None:
    listed = expected.get(PurePosixPath(member.name).as_posix())
    stream = tar.extractfile(member)
    if listed is None or stream is None:
        raise BackupError(f"refusing {member.name!r}: it is not in the snapshot's manifest")
    data = stream.read()
    if hashlib.sha256(data).hexdigest() != listed.sha256:
        raise BackupError(f"{member.name!r} does not match its checksum; the snapshot is damaged")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
