"""``chatgate backup``: one ``.tar.gz`` of a profile, safe to take while the gateway runs.

The archive holds every file under ``$CHATGATE_HOME`` (memories, pending writes, skills
with their usage, archive and curator snapshots, cron output, ...) except:

- ``backups/`` (earlier archives), lock files and SQLite's ``-wal``/``-shm`` side files;
- each SQLite database (``state.db``, a memory provider's ``*.sqlite3``), which is
  replaced by a consistent snapshot taken with the online backup API
  (``core.store.snapshot``);
- ``config.yaml``, replaced by a copy without secrets (``gateway.backup_config``), and
  any ``.env`` file, left out whole;

plus ``manifest.json`` (``gateway.backup_manifest``). On PostgreSQL the database is not
in the archive: it is backed up with ``pg_dump`` (the manifest says so, and so does the
command). Files are read once each and archived as read, so a memory write during the
backup leaves the archive with either version, never half of each.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from tempfile import TemporaryDirectory

from core.errors import StoreError
from core.store.schema_version import schema_revision
from core.store.snapshot import schema_revision_of, snapshot_sqlite, sqlite_file, table_counts
from gateway.backup_config import secret_free_config
from gateway.backup_manifest import DATABASE, MANIFEST, Manifest, file_counts, sha256
from gateway.progress import progress_bar
from gateway.settings import Settings

BACKUPS = "backups"
SIDE_FILES = ("-wal", "-shm", "-journal", ".lock")
SQLITE_FILES = (".db", ".sqlite", ".sqlite3")
LEFT_OUT = frozenset({"config.yaml", ".env"})
CHUNK = 1 << 20

Source = bytes | Path


@dataclass(frozen=True)
class BackupReport:
    """Where the archive went and what its manifest says."""

    path: Path
    manifest: Manifest


def default_archive(home: Path, now: datetime | None = None) -> Path:
    """``$CHATGATE_HOME/backups/chatgate-<UTC time>.tar.gz``."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return home / BACKUPS / f"chatgate-{stamp}.tar.gz"


async def write_backup(settings: Settings, target: Path | None = None) -> BackupReport:
    """Write the archive of ``settings.home`` to ``target`` (``default_archive`` if None)."""
    path = (target or default_archive(settings.home)).expanduser().resolve()
    database = sqlite_file(settings.database_url)
    config, removed = secret_free_config(settings)
    # An archive written into the home (not under backups/) is not part of the next one.
    skipped = {path, path.with_name(path.name + ".partial")}
    with TemporaryDirectory(prefix="chatgate-backup-") as work:
        members = _members(settings, Path(work), database, skipped)
        if config is not None:
            members["config.yaml"] = config.encode()
        manifest = await _manifest(settings, members, removed)
        _write_archive(path, members, manifest)
    return BackupReport(path, manifest)


def _members(
    settings: Settings, work: Path, database: Path | None, skipped: set[Path]
) -> dict[str, Source]:
    members: dict[str, Source] = {}
    if database is not None and database.exists():
        members[DATABASE] = _snapshot(database, work / DATABASE, "snapshot of the SessionDB")
    for path in sorted(settings.home.rglob("*")):
        name = path.relative_to(settings.home).as_posix()
        if path.resolve() in skipped or not _archived(path, name, database):
            continue
        members[name] = _file(path, work / name, name)
    return members


def _file(path: Path, work: Path, name: str) -> Source:
    """A file as archived: a snapshot of a SQLite database, else its bytes read once."""
    if path.suffix in SQLITE_FILES:
        try:
            return _snapshot(path, work, name)
        except StoreError:
            pass  # named like a database but not one: archived as it is
    return path.read_bytes()


def _archived(path: Path, name: str, database: Path | None) -> bool:
    if name.split("/", 1)[0] == BACKUPS or name in LEFT_OUT or name == DATABASE:
        return False
    if database is not None and path.resolve() == database.resolve():
        return False
    return path.is_file() and not path.is_symlink() and not name.endswith(SIDE_FILES)


def _snapshot(source: Path, target: Path, label: str) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    with progress_bar(label) as bar:
        snapshot_sqlite(source, target, progress=bar.update)
    return target


async def _manifest(settings: Settings, members: dict[str, Source], removed: list[str]) -> Manifest:
    files = {name: data for name, data in members.items() if isinstance(data, bytes)}
    counts = file_counts(files)
    snapshot = members.get(DATABASE)
    kind, revision = "sqlite", None
    if isinstance(snapshot, Path):
        counts |= table_counts(snapshot)
        revision = schema_revision_of(snapshot)
    elif sqlite_file(settings.database_url) is None:
        kind, revision = "postgresql", await schema_revision(settings.database_url)
    checksums = {name: _checksum(data) for name, data in members.items()}
    return Manifest(
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        database=kind,
        schema_revision=revision,
        counts=counts,
        files=checksums,
        removed_from_config=removed,
    )


def _checksum(data: Source) -> str:
    if isinstance(data, bytes):
        return sha256(data)
    digest = hashlib.sha256()
    with data.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _write_archive(path: Path, members: dict[str, Source], manifest: Manifest) -> None:
    """Write to a ``.partial`` file first: a failed backup leaves no half archive."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    total = sum(len(d) if isinstance(d, bytes) else d.stat().st_size for d in members.values())
    # The archive holds every conversation: readable by its owner only.
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with (
        os.fdopen(fd, "wb") as raw,
        tarfile.open(fileobj=raw, mode="w:gz") as archive,
        progress_bar("writing the archive", total, in_bytes=True) as bar,
    ):
        for name, data in members.items():
            _add(archive, name, data)
            bar.advance(len(data) if isinstance(data, bytes) else data.stat().st_size)
        _add(archive, MANIFEST, manifest.to_json())
    partial.replace(path)


def _add(archive: tarfile.TarFile, name: str, data: Source) -> None:
    info = tarfile.TarInfo(name)
    info.mode = 0o600
    info.mtime = int(datetime.now(UTC).timestamp())
    if isinstance(data, bytes):
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    else:
        info.size = data.stat().st_size
        with data.open("rb") as handle:
            archive.addfile(info, handle)
