"""``chatgate status``: what this profile runs and when its scheduled work comes next.

It reads the configuration and the SessionDB, so it answers whether or not a gateway
is running: the scheduler's periodic checks with their period, when the Curator may
next run and why not sooner, the cron jobs in the order they run next, and the
configured MCP servers, with their live state and tool count when this profile's
gateway answers on its port (``gateway.status_live`` reads its ``/metrics``).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from core.record import record
from core.store.cron import CronJob
from core.store.db import SessionDB
from core.store.location import redacted_url
from gateway.cli_tables import add_id_column
from gateway.config import Settings, load_settings
from gateway.features.cron import CronSettings
from gateway.features.curator import CuratorSettings, build_curator
from gateway.features.mcp import McpSettings
from gateway.features.memory import MemorySettings
from gateway.features.review import ReviewSettings
from gateway.features.skills import SkillsSettings
from gateway.json_output import JsonFlag, emit, iso
from gateway.skills_cli import skill_store
from gateway.status_live import LiveServer, live_mcp_servers, metrics_url

console = Console(highlight=False)


def status(as_json: JsonFlag = False) -> None:
    """Show the model, the SessionDB and the scheduler's jobs with their next run times."""
    from gateway.runtime import migrate

    settings = load_settings()
    asyncio.run(migrate(settings))
    report = asyncio.run(_gather(settings))
    if as_json:
        emit(_json(report))
    else:
        _print(report)


@record
class JobLine:
    """One scheduler job; ``next_run`` is a time, or words such as ``per session``."""

    job: str
    every: str
    next_run: float | str | None
    notes: str


@record
class Report:
    home: str
    database: str
    model: str
    provider: str
    active: int
    reviews_done: int
    jobs: list[JobLine]
    # name -> "stdio" or "http", with " (disabled)" when it is off
    mcp_servers: dict[str, str]
    # Tool calls waiting for a person's approval, in every chat.
    approvals_pending: int = 0
    # What the running gateway says of each server (None: no gateway answered).
    mcp_live: dict[str, LiveServer] | None = None
    metrics_url: str = ""


async def _gather(settings: Settings) -> Report:
    curator_on = settings.section(CuratorSettings).enabled
    cron = settings.section(CronSettings)
    async with SessionDB(settings.database_url) as db:
        active = await db.active_session_count()
        done = await db.reviews.count_done()
        waiting = await db.approvals.count_pending()
        curator = build_curator(settings, db, skill_store(settings))
        gate = await curator.gate() if curator_on else None
        jobs = await db.cron.next_runs(limit=50) if cron.enabled else []
    lines = [JobLine("background review", *_review_row(settings))]
    if cron.enabled:
        lines.append(JobLine("cron jobs", _every(cron.tick_seconds), "at each look", ""))
    if gate is not None:
        every = _every(settings.section(CuratorSettings).check_minutes * 60)
        note = "due now" if gate.due else gate.reason
        lines.append(JobLine("curator check", every, gate.next_due_at, note))
    else:
        lines.append(JobLine("curator check", "-", None, "disabled"))
    lines += [JobLine(f"cron {j.id}", j.schedule, j.next_run_at, _job_note(j)) for j in jobs]
    model = settings.model_config_for_core()
    where = redacted_url(settings.database_url)
    mcp = _mcp_servers(settings)
    live = await live_mcp_servers(settings) if mcp else None
    return Report(
        str(settings.home),
        where,
        model.model,
        model.provider,
        active,
        done,
        lines,
        mcp,
        waiting,
        live,
        metrics_url(settings),
    )


def _mcp_servers(settings: Settings) -> dict[str, str]:
    servers = settings.section(McpSettings).servers
    return {
        name: ("http" if s.url else "stdio") + ("" if s.enabled else " (disabled)")
        for name, s in servers.items()
    }


def _print(report: Report) -> None:
    console.print(f"home:      {report.home}", markup=False)
    console.print(f"database:  {report.database}", markup=False)
    console.print(f"model:     {report.model} via {report.provider}", markup=False)
    console.print(
        f"sessions:  {report.active} active; reviews done: {report.reviews_done}", markup=False
    )
    if report.approvals_pending:
        console.print(
            f"approvals: {report.approvals_pending} waiting (/approve or /deny in the chat)",
            markup=False,
        )
    console.print("\nscheduler jobs:", markup=False)
    table = Table()
    add_id_column(table, "job", (line.job for line in report.jobs))  # "cron <id>"
    for name in ("every", "next run (UTC)", "notes"):
        table.add_column(name)
    for line in report.jobs:
        when = line.next_run if isinstance(line.next_run, str) else _utc(line.next_run)
        table.add_row(Text(line.job), Text(line.every), Text(when), Text(line.notes))
    console.print(table)
    if report.mcp_servers:
        _print_mcp(report)


def _print_mcp(report: Report) -> None:
    console.print("\nmcp servers:", markup=False)
    live = report.mcp_live
    for name, kind in report.mcp_servers.items():
        state = ""
        if live is not None:
            server = live.get(name)
            if server is None or not server.connected:
                state = ": not connected"
            else:
                state = f": connected, {server.tools} tool{'s'[: server.tools != 1]}"
        console.print(f"  {name} ({kind}){state}", markup=False, soft_wrap=True)
    if live is None:
        console.print(
            f"  live state: no gateway answered at {report.metrics_url}"
            " (chatgate mcp list connects from here)",
            markup=False,
            soft_wrap=True,
        )


def _json(report: Report) -> dict[str, object]:
    jobs = [
        {
            "job": line.job,
            "every": line.every,
            "next_run": line.next_run if isinstance(line.next_run, str) else iso(line.next_run),
            "notes": line.notes,
        }
        for line in report.jobs
    ]
    return {
        "home": report.home,
        "database": report.database,
        "model": {"name": report.model, "provider": report.provider},
        "sessions": {"active": report.active, "reviews_done": report.reviews_done},
        "approvals": {"pending": report.approvals_pending},
        "scheduler_jobs": jobs,
        "mcp_servers": report.mcp_servers,
        "mcp_live": None
        if report.mcp_live is None
        else {n: {"connected": v.connected, "tools": v.tools} for n, v in report.mcp_live.items()},
    }


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
