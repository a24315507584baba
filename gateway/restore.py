"""``chatgate restore``: a backup archive back into an empty ``$CHATGATE_HOME``.

Nothing is written into the home until the whole archive has been checked: members are
extracted into a staging folder beside the home, each against its manifest checksum
(a member the manifest does not name, or one it names that is missing, refuses the
archive), the counts are taken again from what was extracted and compared with the
manifest's, and only then is the staging folder renamed into place. The database
snapshot is then migrated to this build's schema if the archive is older.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import tarfile
import zlib
from pathlib import Path, PurePosixPath

from core.errors import BackupError
from core.store.schema_version import code_revision, migration_history, upgrade_schema
from core.store.snapshot import table_counts
from gateway.backup_manifest import DATABASE, MANIFEST, Manifest, file_counts
from gateway.progress import Bar, progress_bar

CHUNK = 1 << 20
UNREADABLE = (tarfile.TarError, EOFError, zlib.error, OSError)


def restore_backup(archive: Path, home: Path) -> Manifest:
    """Restore ``archive`` into ``home`` (absent or empty); ``migrate_restored`` next.

    Raises ``BackupError`` with one line when the home is not empty or the archive is
    damaged, incomplete or disagrees with its manifest; the home is then left untouched.
    """
    if home.exists() and any(home.iterdir()):
        raise BackupError(f"{home} is not empty: restore into a new or empty CHATGATE_HOME")
    staged = home.parent / f".{home.name}.restoring-{secrets.token_hex(4)}"
    try:
        manifest = _extract(archive, staged)
        _check_revision(manifest)
        _check_counts(staged, manifest)
        home.parent.mkdir(parents=True, exist_ok=True)
        if home.exists():
            home.rmdir()
        staged.rename(home)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return manifest


async def migrate_restored(home: Path) -> None:
    """Bring the restored snapshot's schema up to this build's (nothing if none)."""
    database = home / DATABASE
    if database.exists():  # noqa: ASYNC240 - one stat before the migration's own I/O
        with progress_bar("migrating the restored SessionDB") as bar:
            await upgrade_schema(f"sqlite+aiosqlite:///{database}", progress=bar.update)


def _extract(archive: Path, staged: Path) -> Manifest:
    try:
        staged.mkdir(mode=0o700, parents=True)
    except OSError as exc:
        raise BackupError(f"cannot create {staged}: {exc.strerror}") from exc
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            manifest = _manifest_of(tar)
            members = [m for m in tar.getmembers() if m.name != MANIFEST]
            total = sum(m.size for m in members)
            with progress_bar("restoring", total, in_bytes=True) as bar:
                seen = {_extract_member(tar, m, manifest, staged, bar) for m in members}
    except UNREADABLE as exc:
        reason = (str(exc) or type(exc).__name__).splitlines()[0]
        raise BackupError(f"{archive} is not a readable backup archive ({reason})") from exc
    missing = sorted(manifest.files.keys() - seen)
    if missing:
        raise BackupError(f"{archive} is incomplete: {missing[0]} is missing")
    return manifest


def _manifest_of(tar: tarfile.TarFile) -> Manifest:
    try:
        handle = tar.extractfile(MANIFEST)
    except KeyError:
        raise BackupError("the archive has no manifest.json: not a chatgate backup") from None
    if handle is None:
        raise BackupError("the archive's manifest.json is not a file")
    return Manifest.from_json(handle.read())


def _extract_member(
    tar: tarfile.TarFile, member: tarfile.TarInfo, manifest: Manifest, staged: Path, bar: Bar
) -> str:
    name = member.name
    path = PurePosixPath(name)
    if not member.isfile() or path.is_absolute() or ".." in path.parts:
        raise BackupError(f"the archive holds {name!r}, which a backup never does")
    expected = manifest.files.get(name)
    if expected is None:
        raise BackupError(f"the archive holds {name}, which its manifest does not name")
    handle = tar.extractfile(member)
    assert handle is not None  # a regular file always has a body
    target = staged / name
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    # Conversations and memories: readable by their owner only, as in the archive.
    with os.fdopen(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            out.write(chunk)
            bar.advance(len(chunk))
    if digest.hexdigest() != expected:
        raise BackupError(f"the archive is damaged: {name} does not match its checksum")
    return name


def _check_revision(manifest: Manifest) -> None:
    known = dict(migration_history())
    if manifest.schema_revision is not None and manifest.schema_revision not in known:
        raise BackupError(
            f"the archive's schema revision {manifest.schema_revision} is newer than this "
            f"chatgate ({code_revision()}): restore it with chatgate {manifest.chatgate_version}"
        )


def _check_counts(staged: Path, manifest: Manifest) -> None:
    files = {
        name: (staged / name).read_bytes() if name.startswith("memories/") else b""
        for name in manifest.files
    }
    found = file_counts(files)
    if (staged / DATABASE).exists():
        found |= table_counts(staged / DATABASE)
    for key, expected in sorted(manifest.counts.items()):
        if found.get(key) != expected:
            raise BackupError(
                f"the archive does not match its manifest: {expected} {key} listed, "
                f"{found.get(key, 0)} found"
            )
