"""``chatgate curator``: the skills curator's state, passes on demand, snapshots and pins.

A pass started here ignores the schedule's gates (the operator asked for it) but not the
lock: if the gateway is in the middle of a pass, this one is refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from filelock import Timeout
from rich.console import Console
from rich.table import Table

from core.clock import SystemClock
from core.curator.backup import SkillBackups
from core.curator.service import Curator, pass_lock
from core.curator.status import utc
from core.curator.transitions import archive_skill, restore_skill
from core.errors import BackupError, ConfigError, CuratorBusy, TransitionError
from core.models.base import ModelClient
from core.models.factory import build_model_client
from core.skills.store import SkillStore
from core.store.db import SessionDB
from gateway import skills_cli
from gateway.config import Settings, load_settings
from gateway.curator_status import print_status
from gateway.features.curator import CuratorSettings, build_curator

T = TypeVar("T")

curator_app = typer.Typer(
    no_args_is_help=True,
    help="The skills curator: stales and archives unused agent-made skills, never deletes.",
)
console = Console(highlight=False)
err = Console(stderr=True, highlight=False)
Name = Annotated[str, typer.Argument(help="the skill's name")]


def _with_curator(fn: Callable[[Curator], Awaitable[T]], *, model: bool = False) -> T:
    from gateway.runtime import migrate

    settings = load_settings()

    async def go() -> T:
        await migrate(settings)
        client = _model(settings) if model else None
        try:
            async with SessionDB(settings.database_url) as db:
                return await fn(
                    build_curator(settings, db, skills_cli.skill_store(settings), client)
                )
        finally:
            if client is not None:
                await client.aclose()

    return asyncio.run(go())


def _model(settings: Settings) -> ModelClient | None:
    try:
        return build_model_client(settings.model_config_for_core())
    except ConfigError as exc:
        err.print(f"no model for consolidation: {exc}", markup=False)
        return None


@curator_app.command("status")
def status() -> None:
    """Enabled state, runs, thresholds, counts by state and provenance, pins, activity."""
    settings = load_settings()
    data = _with_curator(lambda curator: curator.status())
    kept = len(SkillBackups(skills_cli.skill_store(settings)).all())
    print_status(console, data, backups=kept, now=SystemClock().now())


@curator_app.command("run")
def run(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show what would change")] = False,
    consolidate: Annotated[
        bool, typer.Option("--consolidate", help="also run the model merge pass")
    ] = False,
) -> None:
    """Run one pass now (the schedule's gates do not apply); print its report."""
    merge = consolidate or load_settings().section(CuratorSettings).consolidate

    async def go(curator: Curator) -> str:
        from gateway.progress import progress_bar

        # A pass has no count to show in advance: a pulsing bar, on a terminal only.
        with progress_bar("curator pass"):
            report = await curator.run("manual", dry_run=dry_run, consolidate=merge)
        return f"{report.render()}\nreport: {report.path}"

    try:
        text = _with_curator(go, model=merge and not dry_run)
    except CuratorBusy as exc:
        err.print(f"{exc}; try again later", markup=False)
        raise typer.Exit(1) from None
    console.print(text, markup=False)


@curator_app.command("rollback")
def rollback(
    list_: Annotated[bool, typer.Option("--list", help="list the snapshots")] = False,
    backup_id: Annotated[str, typer.Option("--id", help="the snapshot (default: latest)")] = "",
) -> None:
    """Restore the skills folder from a snapshot; the current tree is snapshotted first."""
    settings = load_settings()
    backups = SkillBackups(skills_cli.skill_store(settings))
    if list_:
        _list_backups(backups)
        return
    known = backups.all()
    if not known:
        err.print("no snapshots yet: the curator takes one before each pass", markup=False)
        raise typer.Exit(1)
    target = backup_id or known[-1].id
    try:
        with pass_lock(settings.home / "skills"):
            before = backups.rollback(target, SystemClock().now())
    except Timeout:
        err.print("a Curator pass is running; try again once it is done", markup=False)
        raise typer.Exit(1) from None
    except BackupError as exc:
        err.print(str(exc), markup=False)
        raise typer.Exit(1) from None
    backups.prune(
        settings.section(CuratorSettings).keep_backups, protect=frozenset({target, before.id})
    )
    console.print(f"rolled back the skills folder to snapshot {target}", markup=False)
    console.print(
        f"the tree before this rollback is snapshot {before.id}; "
        f"undo with: chatgate curator rollback --id {before.id}",
        markup=False,
    )


def _list_backups(backups: SkillBackups) -> None:
    known = backups.all()
    if not known:
        console.print("no snapshots yet")
        return
    table = Table("id", "created", "reason", "files", "size")
    for backup in reversed(known):
        created = datetime.fromtimestamp(backup.created_at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
        table.add_row(backup.id, created, backup.reason, str(len(backup.files)), _size(backup.size))
    console.print(table)


@curator_app.command("pin")
def pin(name: Name) -> None:
    """Pin a skill: never staled or archived, and skill_manage cannot delete it."""
    skills_cli.pin(name)


@curator_app.command("unpin")
def unpin(name: Name) -> None:
    """Let the curator stale and archive a skill again when it goes unused."""
    skills_cli.unpin(name)


@curator_app.command("adopt")
def adopt(name: Name) -> None:
    """Hand a person's skill to the curator; its inactivity clock is kept."""
    skills_cli.adopt(name)


@curator_app.command("archive")
def archive(name: Name) -> None:
    """Move a skill to skills/.archive now (pinned skills are refused)."""
    _move(archive_skill, name, "archived")


@curator_app.command("restore")
def restore(name: Name) -> None:
    """Bring an archived skill back into the library, active again."""
    _move(restore_skill, name, "restored")


def _move(move: Callable[[SkillStore, str, datetime], Path], name: str, done: str) -> None:
    settings = load_settings()
    try:
        moved = move(skills_cli.skill_store(settings), name, utc(SystemClock().now()))
    except TransitionError as exc:
        err.print(str(exc), markup=False)
        raise typer.Exit(1) from None
    console.print(f"{done} {name} to {moved}", markup=False)


@curator_app.command("pause")
def pause() -> None:
    """Skip scheduled passes until resumed (manual runs still work)."""
    _with_curator(lambda curator: curator.pause(True))
    console.print("curator paused: scheduled passes are skipped until `chatgate curator resume`")


@curator_app.command("resume")
def resume() -> None:
    """Let scheduled passes run again."""
    _with_curator(lambda curator: curator.pause(False))
    console.print("curator resumed")


def _size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} MB"


__all__ = ["curator_app"]

if __name__ == "__main__":
    curator_app()
