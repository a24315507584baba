"""``chatgate backup`` and ``chatgate restore``: a profile into one archive and back.

What the archive holds and how it is checked: ``gateway.backup`` and ``gateway.restore``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

console = Console(highlight=False, soft_wrap=True)


def backup(
    path: Annotated[
        Path | None,
        typer.Argument(help="where to write the archive (default: $CHATGATE_HOME/backups/)"),
    ] = None,
) -> None:
    """Write one .tar.gz of this profile: a consistent SessionDB snapshot, memories,
    pending writes, skills and config.yaml without its secrets. Safe while the gateway
    runs."""
    from gateway.backup import write_backup
    from gateway.config import load_settings

    report = asyncio.run(write_backup(load_settings(), path))
    counts = ", ".join(f"{value} {key}" for key, value in sorted(report.manifest.counts.items()))
    console.print(f"wrote {report.path} ({counts})", markup=False)
    if report.manifest.database == "postgresql":
        console.print(
            "the PostgreSQL database is not in the archive: back it up with pg_dump",
            markup=False,
        )
    if report.manifest.removed_from_config:
        removed = ", ".join(report.manifest.removed_from_config)
        console.print(f"left out of config.yaml (secrets): {removed}", markup=False)


def restore(
    archive: Annotated[Path, typer.Argument(help="an archive written by chatgate backup")],
) -> None:
    """Restore an archive into $CHATGATE_HOME, which must be new or empty: every file is
    checked against the manifest's checksums and counts, then the database is migrated
    to this version's schema."""
    from gateway.config import default_home
    from gateway.restore import migrate_restored, restore_backup

    home = default_home().resolve()
    manifest = restore_backup(archive.expanduser(), home)
    asyncio.run(migrate_restored(home))
    counts = ", ".join(f"{value} {key}" for key, value in sorted(manifest.counts.items()))
    console.print(f"restored {archive} into {home} ({counts})", markup=False)
    if manifest.database == "postgresql":
        console.print("the database was PostgreSQL: restore it with pg_restore", markup=False)
    if manifest.removed_from_config:
        removed = ", ".join(manifest.removed_from_config)
        console.print(f"supply again (env or config.yaml): {removed}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``backup`` and ``restore`` to the ``chatgate`` command."""
    app.command()(backup)
    app.command()(restore)
