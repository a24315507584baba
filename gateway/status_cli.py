"""``chatgate status``: what this profile runs and when its scheduled work comes next.

It reads the configuration and the SessionDB, so it answers whether or not a gateway
is running: the scheduler's periodic checks with their period, when the Curator may
next run and why not sooner, and the cron jobs in the order they run next.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import typer
from rich.console import Console
from rich.table import Table

from core.store.cron import CronJob
from core.store.db import SessionDB
from core.store.location import redacted_url
from gateway.config import Settings, load_settings
from gateway.features.cron import CronSettings
from gateway.features.curator import CuratorSettings, build_curator
from gateway.features.memory import MemorySettings
from gateway.features.review import ReviewSettings
from gateway.features.skills import SkillsSettings
from gateway.skills_cli import skill_store

console = Console(highlight=False)


def status() -> None:
    """Show the model, the SessionDB and the scheduler's jobs with their next run times."""
    from gateway.runtime import migrate

    settings = load_settings()
    asyncio.run(migrate(settings))
    asyncio.run(_show(settings))


async def _show(settings: Settings) -> None:
    curator_on = settings.section(CuratorSettings).enabled
    async with SessionDB(settings.database_url) as db:
        active = await db.active_session_count()
        done = await db.reviews.count_done()
        curator = build_curator(settings, db, skill_store(settings))
        gate = await curator.gate() if curator_on else None
        cron_on = settings.section(CronSettings).enabled
        jobs = await db.cron.next_runs(limit=50) if cron_on else []
    model = settings.model_config_for_core()
    where = redacted_url(settings.database_url)
    console.print(f"home:      {settings.home}", markup=False)
    console.print(f"database:  {where}", markup=False)
    console.print(f"model:     {model.model} via {model.provider}", markup=False)
    console.print(f"sessions:  {active} active; reviews done: {done}", markup=False)
    console.print("\nscheduler jobs:", markup=False)
    table = Table("job", "every", "next run (UTC)", "notes")
    table.add_row("background review", *_review_row(settings))
    cron = settings.section(CronSettings)
    if cron.enabled:
        table.add_row("cron jobs", _every(cron.tick_seconds), "at each look", "")
    if gate is not None:
        note = "due now" if gate.due else gate.reason
        every = _every(settings.section(CuratorSettings).check_minutes * 60)
        next_run = _utc(gate.next_due_at) if gate.next_due_at else "-"
        table.add_row("curator check", every, next_run, note)
    else:
        table.add_row("curator check", "-", "-", "disabled")
    for job in jobs:
        table.add_row(f"cron {job.id}", job.schedule, _utc(job.next_run_at), _job_note(job))
    console.print(table)


def _review_row(settings: Settings) -> tuple[str, str, str]:
    if not settings.section(ReviewSettings).enabled:
        return "-", "-", "disabled"
    m, s = settings.section(MemorySettings), settings.section(SkillsSettings)
    cadence = []
    if m.enabled and m.nudge_interval:
        cadence.append(f"memory every {m.nudge_interval} turns")
    if s.enabled and s.nudge_interval:
        cadence.append(f"skills every {s.nudge_interval} tool steps")
    return "after a reply", "per session", "; ".join(cadence)


def _job_note(job: CronJob) -> str:
    last = f"last: {job.last_status}" if job.last_status else "not run yet"
    return f"{job.name[:40]} ({last})"


def _every(seconds: float) -> str:
    if seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def _utc(at: float | None) -> str:
    if at is None:
        return "-"
    return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


status_app = typer.Typer()
status_app.command("status")(status)
