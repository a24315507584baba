"""``chatgate cron``: scheduled prompts from the shell, kept in the SessionDB.

The shell only changes rows; the running gateway's scheduler runs them. A job made here
has no chat of origin, so it must name where its output goes (any chat or any file).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from core.clock import SystemClock
from core.cron.jobs import Creator, CronJobs, JobSpec
from core.cron.targets import FORMS as TARGET_FORMS
from core.errors import CronError, ScheduleError
from core.store.cron import CronJob
from core.store.db import SessionDB
from gateway.cli_tables import add_id_column
from gateway.config import Settings, load_settings
from gateway.features.cron import CronSettings
from gateway.json_output import JsonFlag, emit, iso

T = TypeVar("T")

cron_app = typer.Typer(no_args_is_help=True, help="Scheduled prompts and where their output goes.")
console = Console(highlight=False)
err = Console(stderr=True, highlight=False)

JobId = Annotated[str, typer.Argument(help="the job's id (see chatgate cron list)")]


@cron_app.command("list")
def list_jobs(as_json: JsonFlag = False) -> None:
    """Every job: schedule, next run (UTC), last status, target and whether it is paused."""
    jobs = _with_jobs(lambda cron: cron.store.jobs())
    if as_json:
        emit([_job_json(job) for job in jobs])
        return
    if not jobs:
        console.print("no cron jobs (add one with chatgate cron add)", markup=False)
        return
    table = Table()
    add_id_column(table, "id", (job.id for job in jobs))
    for name in ("name", "schedule", "next run (UTC)", "last status", "deliver", "paused"):
        table.add_column(name)
    for job in jobs:
        cells = (
            job.id,
            job.name,
            job.schedule,
            _utc(job.next_run_at) if job.next_run_at is not None else "finished",
            job.last_status or "",
            job.deliver,
            "yes" if job.paused else "",
        )
        table.add_row(*(Text(cell) for cell in cells))
    console.print(table)


def _job_json(job: CronJob) -> dict[str, object]:
    return {
        "id": job.id,
        "name": job.name,
        "schedule": job.schedule,
        "next_run_at": iso(job.next_run_at),
        "last_status": job.last_status,
        "deliver": job.deliver,
        "paused": job.paused,
    }


@cron_app.command("add")
def add(
    schedule: Annotated[
        str, typer.Option(help="'30m' (once), 'every 2h', '0 9 * * mon-fri' or an ISO time")
    ],
    prompt: Annotated[str, typer.Option(help="what each run should do")],
    deliver: Annotated[
        str, typer.Option(help="'<platform>[/<route>]:<chat_id>[:<thread_id>]' or 'file:<path>'")
    ] = "",
    name: Annotated[str, typer.Option(help="a short name (default: the prompt's start)")] = "",
    skill: Annotated[
        list[str] | None, typer.Option(help="a skill loaded for each run (repeatable)")
    ] = None,
) -> None:
    """Add a job; its output goes to the chat or file given with --deliver."""
    if not deliver.strip():
        err.print(f"--deliver is required: {TARGET_FORMS} (not 'origin')", markup=False)
        raise typer.Exit(2)
    spec = JobSpec(prompt=prompt, schedule=schedule, name=name, skills=skill or [], deliver=deliver)
    job = _with_jobs(lambda cron: cron.create(spec, Creator("cli")))
    when = _utc(job.next_run_at) if job.next_run_at is not None else "never"
    console.print(f"added {job.id} ({job.name}); next run {when} UTC", markup=False)


@cron_app.command("remove")
def remove(job_id: JobId) -> None:
    """Delete a job and its run history."""
    _with_job(job_id, lambda cron, job: cron.remove(job))
    console.print(f"removed {job_id}", markup=False)


@cron_app.command("pause")
def pause(job_id: JobId) -> None:
    """Stop a job from running until it is resumed."""
    _with_job(job_id, lambda cron, job: cron.pause(job))
    console.print(f"paused {job_id}", markup=False)


@cron_app.command("resume")
def resume(job_id: JobId) -> None:
    """Let a paused job run again; its next run counts from now."""
    job = _with_job(job_id, lambda cron, job: cron.resume(job))
    when = _utc(job.next_run_at) if job.next_run_at is not None else "never"
    console.print(f"resumed {job_id}; next run {when} UTC", markup=False)


@cron_app.command("run")
def run(job_id: JobId) -> None:
    """Make a job due now; the running gateway runs it at its next look."""
    settings = load_settings()
    _with_job(job_id, lambda cron, job: cron.queue_run(job), settings)
    console.print(
        f"{job_id} is due now; the running gateway picks it up within "
        f"{settings.section(CronSettings).tick_seconds:g} seconds (cron.tick_seconds)",
        markup=False,
    )


def _with_job(
    job_id: str,
    fn: Callable[[CronJobs, CronJob], Awaitable[T]],
    settings: Settings | None = None,
) -> T:
    async def go(cron: CronJobs) -> T:
        job = await cron.store.get(job_id)
        if job is None:
            raise CronError(f"no cron job {job_id!r} (see chatgate cron list)")
        return await fn(cron, job)

    return _with_jobs(go, settings)


def _with_jobs(fn: Callable[[CronJobs], Awaitable[T]], settings: Settings | None = None) -> T:
    from gateway.runtime import migrate

    settings = settings or load_settings()

    async def go() -> T:
        await migrate(settings)
        async with SessionDB(settings.database_url) as db:
            cron = CronJobs(
                db.cron,
                SystemClock(),
                skills_dir=settings.home / "skills",
                timezone=settings.section(CronSettings).timezone,
                max_jobs_per_chat=settings.section(CronSettings).max_jobs_per_chat,
            )
            return await fn(cron)

    try:
        return asyncio.run(go())
    except (CronError, ScheduleError) as exc:  # a bad cron.timezone is a ScheduleError
        err.print(str(exc), markup=False)
        raise typer.Exit(1) from None


def _utc(at: float) -> str:
    return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
