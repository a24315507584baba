"""The gateway's scheduler: APScheduler 3.x (``AsyncIOScheduler``) on the gateway's loop.

APScheduler only says *when to look*: every periodic job here is a cheap check (are
cron jobs due? may the Curator run?) whose decision reads the injectable clock and the
SessionDB. That keeps the state durable and shared by replicas, and lets tests move
days ahead by calling the checks with a manual clock instead of waiting for timers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from core.record import record

log = logging.getLogger(__name__)

Check = Callable[[], Awaitable[object]]


@record
class ScheduledJob:
    id: str
    name: str
    every_seconds: float
    next_run: datetime | None


class Scheduler:
    """Periodic checks by id; ``start`` inside the running loop, ``stop`` on the way out."""

    def __init__(self) -> None:
        self._scheduler = AsyncIOScheduler(timezone=UTC)
        self._every: dict[str, float] = {}
        self._running: set[asyncio.Task[Any]] = set()

    def every(
        self, job_id: str, name: str, seconds: float, check: Check, *, first_in: float | None = None
    ) -> None:
        """Run ``check`` every ``seconds`` (first after ``first_in``, default one period).

        A run that is still going when the next is due is not doubled, and runs missed
        while the loop was busy collapse into one.
        """
        self._every[job_id] = seconds
        first = datetime.now(UTC) + timedelta(seconds=seconds if first_in is None else first_in)
        self._scheduler.add_job(
            self._tracked(name, check),
            IntervalTrigger(seconds=seconds, timezone=UTC),
            id=job_id,
            name=name,
            next_run_time=first,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(int(seconds), 1),
            replace_existing=True,
        )

    def run_soon(self, job_id: str) -> None:
        """Bring ``job_id``'s next run forward to now (e.g. a cron job was queued)."""
        job = self._scheduler.get_job(job_id)
        if job is not None:
            job.modify(next_run_time=datetime.now(UTC))

    def jobs(self) -> list[ScheduledJob]:
        return [
            ScheduledJob(job.id, job.name, self._every.get(job.id, 0.0), job.next_run_time)
            for job in self._scheduler.get_jobs()
        ]

    @property
    def running(self) -> bool:
        return bool(self._scheduler.running)

    def start(self) -> None:
        self._scheduler.start()

    async def stop(self) -> None:
        """Stop scheduling, then cancel and await the checks still running (a Curator
        pass, a cron look), so none outlives the SessionDB it writes to."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
        running = list(self._running)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    def _tracked(self, name: str, check: Check) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            task = asyncio.current_task()
            if task is not None:
                self._running.add(task)
            try:
                await check()
            except Exception:  # one failed look must not stop the next
                log.exception("scheduled check %s failed", name)
            finally:
                if task is not None:
                    self._running.discard(task)

        return run
