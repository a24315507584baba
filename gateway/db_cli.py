"""``chatgate db history`` and ``chatgate db downgrade``: the schema's migrations.

A downgrade takes the database's lease first, as ``chatgate run`` does, so it is refused
in one line while a gateway uses the database.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from rich.console import Console

console = Console(highlight=False, soft_wrap=True)


def history() -> None:
    """List the migrations this version knows, oldest first; the database's is marked."""
    from core.store.schema_version import migration_history, schema_revision
    from gateway.config import load_settings

    current = asyncio.run(schema_revision(load_settings().database_url))
    for revision, message in migration_history():
        mark = "*" if revision == current else " "
        console.print(f"{mark} {revision}  {message}", markup=False)
    if current is None:
        console.print("  (the database has no schema yet)", markup=False)


def downgrade(
    revision: Annotated[str, typer.Argument(help='the revision to go back to, or "base"')],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False,
) -> None:
    """Take the schema back to REVISION. Tables and columns newer than it are dropped,
    with their data: take a backup first."""
    from gateway.config import load_settings

    settings = load_settings()
    if not yes and not typer.confirm(
        f"downgrade the SessionDB to {revision}, dropping newer data?"
    ):
        raise typer.Exit(1)
    asyncio.run(_downgrade(settings.database_url, revision))
    console.print(f"database is at {revision}", markup=False)


async def upgrade_with_progress(url: str, *, busy_timeout_ms: int = 5000) -> None:
    """Apply pending migrations, with a progress bar on a terminal (a big database's
    migrations can take minutes)."""
    from core.store.schema_version import upgrade_schema
    from gateway.progress import progress_bar

    with progress_bar("migrating the SessionDB") as bar:
        await upgrade_schema(url, busy_timeout_ms=busy_timeout_ms, progress=bar.update)


async def _downgrade(url: str, revision: str) -> None:
    from core.store.lease import DatabaseLease
    from core.store.schema_version import downgrade_schema

    async with DatabaseLease(url):
        await downgrade_schema(url, revision)


def register(db_app: typer.Typer) -> None:
    """Add ``history`` and ``downgrade`` to ``chatgate db``."""
    db_app.command("history")(history)
    db_app.command("downgrade")(downgrade)
