"""Cron: scheduled prompts, made with the ``cronjob`` tool or ``chatgate cron``, whose
output is delivered to a chat or a file.

Each run is a turn of a fresh session on the job's chat (searchable like any other),
without the ``cronjob`` tool itself. Due jobs are looked for every
``cron.tick_seconds``, and at once when a job is queued to run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator

from adapters.platform import Section
from core.cron.executor import SessionExecutor
from core.cron.service import CronService
from core.cron.tool import CronJobTool
from core.messages import ChatTarget
from core.usage.background import BackgroundModel
from gateway.features.base import Contribution, FeatureContext, FeatureSpec, Metric
from gateway.settings import Settings

STARTER_CONFIG = """\
cron:
  enabled: true            # the cronjob tool and scheduled runs
  tick_seconds: 30         # how often due jobs are looked for
  max_jobs_per_chat: 50
  concurrency: 2           # runs at once
  timezone: UTC            # for cron expressions and ISO times without an offset
"""


class CronSettings(Section):
    """Scheduled prompts whose output is delivered to a chat or a file."""

    enabled: bool = True
    # How often due jobs are looked for (a job created in chat also wakes the scheduler).
    tick_seconds: float = Field(default=30, ge=1, le=3600)
    # Jobs one chat may hold, so a runaway model cannot fill the table.
    max_jobs_per_chat: int = Field(default=50, ge=1, le=10_000)
    # Runs at once: the rest wait, so a 09:00 rush cannot crowd out people's replies.
    concurrency: int = Field(default=2, ge=1, le=64)
    # The zone five-field cron expressions and ISO times without an offset are read in.
    timezone: str = "UTC"

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ValueError, ZoneInfoNotFoundError):
            raise ValueError(
                f"unknown time zone {value!r} (use an IANA name such as UTC)"
            ) from None
        return value


class Cron:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self.service: CronService | None = None

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        settings, core = self._settings, ctx.core
        c = settings.section(CronSettings)
        executor = SessionExecutor(
            ctx.db,
            core.sessions,
            BackgroundModel(ctx.model, "cron", core.budgets),
            core.tools,
            ctx.clock,
            settings.caller_context,
            max_iterations=settings.sessions.max_iterations,
        )

        async def notify(target: ChatTarget, texts: Sequence[str], session_id: str | None) -> None:
            await core.notify(target, texts, session_id=session_id)

        service = CronService(
            ctx.db,
            ctx.clock,
            executor,
            notify,
            skills_dir=settings.home / "skills",
            home=settings.home,
            timezone=c.timezone,
            max_jobs_per_chat=c.max_jobs_per_chat,
            max_concurrent_runs=c.concurrency,
        )
        self.service = service
        # The service schedules its own look: it also brings it forward when a job is queued.
        service.attach(ctx.scheduler, c.tick_seconds)
        try:
            yield Contribution(
                tools=[CronJobTool(service.jobs, wake=service.wake)],
                recover=service.recover,
                metrics=lambda: _metrics(service),
            )
        finally:
            await service.aclose()


def _metrics(service: CronService) -> Iterator[Metric]:
    yield Metric("chatgate_cron_runs", "Cron job runs", "counter", service.outcomes, "status")


def build(settings: Settings) -> Cron | None:
    return Cron(settings) if settings.section(CronSettings).enabled else None


SPEC = FeatureSpec("cron", build, settings=CronSettings, starter_config=STARTER_CONFIG)
