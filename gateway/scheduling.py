"""The gateway's scheduled work: cron jobs, the Curator check and their APScheduler.

Cron needs its ``cronjob`` tool registered before the core is built, while its runs
need the core (sessions, tools, outbox); ``CronWiring`` makes the tool first and is
bound to the core once it exists.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.assembly import Core
from core.clock import Clock
from core.cron.executor import SessionExecutor
from core.cron.service import CronOutput, CronService
from core.cron.tool import CronJobTool
from core.curator.service import Curator
from core.messages import ChatTarget
from core.models.base import ModelClient
from core.scheduler import Scheduler
from core.skills.store import SkillStore
from core.store.cron import CronJob
from core.store.db import SessionDB
from gateway.config import Settings
from gateway.curator_cli import build_curator

CURATOR_JOB = "curator"


class CronWiring:
    """The cron service and its tool, bound to the core with ``bind``."""

    def __init__(self, settings: Settings, db: SessionDB, clock: Clock) -> None:
        self._settings = settings
        self._db = db
        self._clock = clock
        self._core: Core | None = None
        self._executor: SessionExecutor | None = None
        self.service = CronService(
            db,
            clock,
            self._execute,
            self._notify,
            skills_dir=settings.home / "skills",
            home=settings.home,
            timezone=settings.cron.timezone,
            max_jobs_per_chat=settings.cron.max_jobs_per_chat,
            max_concurrent_runs=settings.cron.concurrency,
        )
        self.tool = CronJobTool(self.service.jobs, wake=self.service.wake)

    def bind(self, core: Core) -> None:
        self._core = core
        self._executor = SessionExecutor(
            self._db,
            core.sessions,
            core.model,
            core.tools,
            self._clock,
            self._settings.caller_context,
            max_iterations=self._settings.sessions.max_iterations,
        )

    async def _execute(self, job: CronJob, prompt: str) -> CronOutput:
        if self._executor is None:
            raise RuntimeError("cron ran before the core was bound")
        return await self._executor(job, prompt)

    async def _notify(
        self, target: ChatTarget, texts: Sequence[str], session_id: str | None
    ) -> None:
        if self._core is None:
            raise RuntimeError("cron delivered before the core was bound")
        await self._core.notify(target, texts, session_id=session_id)


def schedule_curator(
    settings: Settings,
    db: SessionDB,
    model: ModelClient,
    clock: Clock,
    scheduler: Scheduler,
    skills: SkillStore,
) -> Curator | None:
    """The Curator, checked every ``curator.check_minutes`` (first at start, which arms it).

    ``skills`` is the store the skill tools write through, so a pass shows in the index.
    """
    if not settings.curator.enabled:
        return None
    curator = build_curator(settings, db, skills, model, clock)
    scheduler.every(
        CURATOR_JOB, "curator check", settings.curator.check_minutes * 60, curator.check, first_in=0
    )
    return curator
