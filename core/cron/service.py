"""The cron scheduler: find due jobs, claim each once, run it, deliver and record the run.

A run missed while the gateway was down runs once at the next look if it is at most a
grace window late (half the period, 2 minutes to 2 hours); an older one is recorded as
skipped and logged, never run, so a long outage does not end in a burst of stale output.
Each job is claimed with a compare-and-set on ``next_run_at``, so with several replicas
on one database only one of them runs it, and one process never runs a job twice at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from core.clock import Clock
from core.cron.delivery import Deliverer, Notify, Resolved, is_silent, notice, resolve
from core.cron.jobs import CronJobs
from core.cron.prompt import build_run_prompt
from core.cron.targets import format_target
from core.errors import (
    BudgetExceeded,
    CronError,
    ModelError,
    PromptRefused,
    ScheduleError,
    TargetError,
)
from core.record import record
from core.scheduler import Scheduler
from core.store.cron import CronJob, RunEnd, RunStatus
from core.store.db import SessionDB
from core.tasks import TaskSet

TICK_JOB = "cron"

log = logging.getLogger(__name__)


@record
class CronOutput:
    """What a run's fresh session answered; ``session_id`` names that session."""

    session_id: str | None
    text: str


@record
class CronRunRequest:
    """One run about to start: the job, the assembled prompt and where output goes."""

    job: CronJob
    prompt: str
    target: Resolved


# Runs ``prompt`` in a fresh session for ``job``; raises ``ModelError`` when the model fails.
CronExecutor = Callable[[CronJob, str], Awaitable[CronOutput]]


@record
class CronRunResult:
    """How one due job ended at this look: ran (ok/silent/failed/refused) or skipped."""

    job_id: str
    name: str
    status: RunStatus
    scheduled_for: float | None
    delivered_to: str | None = None
    error: str | None = None


class CronService:
    """Runs due jobs of one SessionDB; ``tick`` is one look, ``start`` keeps looking."""

    def __init__(
        self,
        db: SessionDB,
        clock: Clock,
        executor: CronExecutor,
        notify: Notify,
        *,
        skills_dir: Path,
        home: Path,
        timezone: str = "UTC",
        max_jobs_per_chat: int = 50,
        max_concurrent_runs: int = 2,
    ) -> None:
        self.store = db.cron
        self.jobs = CronJobs(
            self.store,
            clock,
            skills_dir=skills_dir,
            timezone=timezone,
            max_jobs_per_chat=max_jobs_per_chat,
        )
        self._clock = clock
        self._executor = executor
        self._deliverer = Deliverer(notify, home)
        self._skills_dir = skills_dir
        self._tasks = TaskSet("cron")
        self._running: set[str] = set()
        self._scheduler: Scheduler | None = None
        self._looking = False
        self.outcomes: dict[str, int] = {}
        self._slots = asyncio.Semaphore(max_concurrent_runs)
        self._look_again = False

    async def tick(self) -> list[CronRunResult]:
        """Look once: skip stale runs, start the rest, and wait for the ones started here."""
        skipped, started = await self._dispatch()
        finished = await asyncio.gather(*started)
        return skipped + list(finished)

    def attach(self, scheduler: Scheduler, tick_seconds: float) -> None:
        """Have ``scheduler`` look for due jobs every ``tick_seconds`` (and once at start).

        A look starts the due runs and returns; the runs go on as tracked tasks.
        """
        self._scheduler = scheduler
        scheduler.every(TICK_JOB, "cron jobs", tick_seconds, self._look, first_in=0)

    def wake(self) -> None:
        """Look now instead of at the next tick (a job was queued to run)."""
        self._look_again = True  # a look already under way goes round once more
        if self._scheduler is not None:
            self._scheduler.run_soon(TICK_JOB)

    async def _look(self) -> None:
        if self._looking:
            return
        self._looking = True
        try:
            self._look_again = True
            while self._look_again:
                self._look_again = False
                await self._dispatch()
        finally:
            self._looking = False

    async def run_now(self, job_id: str) -> CronJob:
        """Queue a job to run at once and wake the loop; ``CronError`` if it cannot run."""
        job = await self.store.get(job_id)
        if job is None:
            raise CronError(f"No cron job {job_id}.")
        queued = await self.jobs.queue_run(job)
        self.wake()
        return queued

    async def recover(self) -> int:
        """Requeue runs a crash left unfinished (call once at start, before looking)."""
        count = await self.store.recover_interrupted(self._clock.now())
        if count:
            log.warning("cron: %d runs were interrupted by a stop; they are requeued", count)
        return count

    async def wait(self) -> None:
        """Return once every run started so far (by any look) has finished."""
        await self._tasks.wait()

    async def aclose(self) -> None:
        """Stop looking; runs in progress are cancelled and recorded as failed."""
        await self._tasks.close()

    async def _dispatch(self) -> tuple[list[CronRunResult], list[asyncio.Task[CronRunResult]]]:
        now = self._clock.now()
        skipped: list[CronRunResult] = []
        started: list[asyncio.Task[CronRunResult]] = []
        for job in await self.store.due(now):
            if job.id in self._running:
                continue  # still running from an earlier look: no job twice at once
            assert job.next_run_at is not None
            result = await self._claim(job, now)
            if isinstance(result, int):
                started.append(self._tasks.spawn(self._run(job, result), name=job.id))
            elif isinstance(result, CronRunResult):
                skipped.append(result)
                self.outcomes[result.status] = self.outcomes.get(result.status, 0) + 1
        return skipped, started

    async def _claim(self, job: CronJob, now: float) -> CronRunResult | int | None:
        """Claim ``job``: its run id when it is ours to run, a result when it was skipped,
        None when another replica claimed it first."""
        due = job.next_run_at
        assert due is not None
        try:
            schedule = self.jobs.schedule_of(job)
        except ScheduleError as exc:
            return await self._give_up(job, now, "failed", f"bad schedule: {exc}", None)
        following = schedule.following(due, now)
        late = now - due
        if late > schedule.grace_seconds(due):
            log.warning(
                "cron: skipped job %s (%s): due %s, %.0f s late, past its grace window",
                job.id,
                job.name,
                _utc(due),
                late,
            )
            error = f"missed: due at {_utc(due)}, {late:.0f} s late (past the grace window)"
            return await self._give_up(job, now, "skipped", error, following)
        run_id = await self.store.claim_run(job, following, now)
        if run_id is None:
            return None
        self._running.add(job.id)
        return run_id

    async def _give_up(
        self, job: CronJob, now: float, status: RunStatus, error: str, following: float | None
    ) -> CronRunResult | None:
        end = RunEnd(status=status, finished_at=now, error=error)
        if not await self.store.claim(job, following, instead=end):
            return None  # another replica had it
        return CronRunResult(job.id, job.name, status, job.next_run_at, error=error)

    async def _run(self, job: CronJob, run_id: int) -> CronRunResult:
        try:
            async with self._slots:
                end = await self._attempt(job)
        except asyncio.CancelledError:
            # Cut off by a shutdown: requeued, so it runs at the next start within grace.
            end = RunEnd("failed", self._clock.now(), error="cancelled: the gateway stopped")
            await asyncio.shield(self.store.interrupt(run_id, job.id, end, job.next_run_at))
            raise
        finally:
            self._running.discard(job.id)
        await self.store.finish_run(run_id, job.id, end)
        self.outcomes[end.status] = self.outcomes.get(end.status, 0) + 1
        log.info("cron: job %s (%s) ran: %s", job.id, job.name, end.status)
        return CronRunResult(
            job.id, job.name, end.status, job.next_run_at, end.delivered_to, end.error
        )

    async def _attempt(self, job: CronJob) -> RunEnd:
        try:
            target = resolve(job)
        except TargetError as exc:
            return RunEnd("failed", self._clock.now(), error=str(exc))
        where = format_target(target)
        at = datetime.fromtimestamp(self._clock.now(), tz=UTC)
        try:
            prompt = await asyncio.to_thread(
                build_run_prompt, self._skills_dir, job.prompt, job.skills, at
            )
        except PromptRefused as exc:
            text = notice(job, f"was not run: {exc.reason}.")
            return await self._send(job, target, text, None, RunEnd("refused", 0, error=exc.reason))
        request = CronRunRequest(job, prompt, target)
        try:
            output = await self._executor(request.job, request.prompt)
        except BudgetExceeded as exc:  # skipped, and logged by the budget gate
            return RunEnd("skipped", self._clock.now(), error=str(exc))
        except ModelError as exc:
            error = f"the model failed: {exc}"
            text = notice(job, f"failed: {error}")
            return await self._send(job, target, text, None, RunEnd("failed", 0, error=error))
        except Exception as exc:
            log.exception("cron: job %s failed", job.id)
            error = f"internal error: {exc.__class__.__name__}"
            text = notice(job, f"failed: {error}")
            return await self._send(job, target, text, None, RunEnd("failed", 0, error=error))
        if is_silent(output.text):
            return RunEnd("silent", self._clock.now(), output.session_id, output.text)
        done = RunEnd("ok", 0, output.session_id, output.text, where)
        text = output.text if output.text.strip() else notice(job, "finished with no output.")
        return await self._send(job, target, text, output.session_id, done)

    async def _send(
        self, job: CronJob, target: Resolved, text: str, session_id: str | None, end: RunEnd
    ) -> RunEnd:
        """Deliver ``text``; the run's end gets the time, and a delivery failure."""
        now = self._clock.now()
        where = format_target(target)
        try:
            await self._deliverer.send(job, target, text, session_id, now)
        except Exception as exc:
            log.exception("cron: delivering job %s to %s failed", job.id, where)
            error = f"delivery to {where} failed: {exc.__class__.__name__}: {exc}"
            if end.error:
                error = f"{end.error}; {error}"
            return RunEnd("failed", now, end.session_id, end.output, None, error)
        return RunEnd(end.status, now, end.session_id, end.output, where, end.error)


def _utc(at: float) -> str:
    return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
