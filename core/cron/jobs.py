"""Making and changing cron jobs, with the same checks for the model's tool and the shell.

Every check happens here, before anything is stored: a schedule that cannot be read, a
target the caller may not use, a skill that is not installed or a prompt the threat scan
flags is refused with a message that says what to do instead.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from core.clock import Clock
from core.cron.prompt import check_skill_names
from core.cron.schedule import Schedule, check_timezone, parse_schedule
from core.cron.targets import Origin, format_target, parse_target
from core.errors import CronError, ScheduleError, TargetError
from core.memory.threats import scan
from core.messages import ChatTarget
from core.record import record
from core.store.cron import CreatedBy, CronJob, CronStore

NAME_CHARS = 60


@record
class JobSpec:
    """What a caller asks for when making a job."""

    prompt: str
    schedule: str
    name: str = ""
    skills: Sequence[str] = ()
    deliver: str = "origin"


@record
class Creator:
    """Who makes a job: the chat (for the model's tool) or the shell (``origin`` None)."""

    created_by: CreatedBy
    origin: ChatTarget | None = None
    user_id: str | None = None

    @property
    def model(self) -> bool:
        return self.created_by == "model"


class CronJobs:
    """Create, update, pause, resume, queue and remove jobs, with every check applied."""

    def __init__(
        self,
        store: CronStore,
        clock: Clock,
        *,
        skills_dir: Path,
        timezone: str = "UTC",
        max_jobs_per_chat: int = 50,
    ) -> None:
        check_timezone(timezone)  # fail at start, not by stopping every job at its first run
        self.store = store
        self.clock = clock
        self.skills_dir = skills_dir
        self.timezone = timezone
        self.max_jobs_per_chat = max_jobs_per_chat

    def schedule_of(self, job: CronJob) -> Schedule:
        """A stored job's schedule (its one-shot time may have passed)."""
        return parse_schedule(
            job.schedule, now=job.created_at, timezone=self.timezone, require_future=False
        )

    async def create(self, spec: JobSpec, creator: Creator) -> CronJob:
        now = self.clock.now()
        prompt = _checked_prompt(spec.prompt)
        schedule = self._parse(spec.schedule, now)
        deliver = _checked_deliver(spec.deliver, creator)
        skills = await self._checked_skills(spec.skills)
        if creator.origin is not None:
            held = await self.store.count(creator.origin)
            if held >= self.max_jobs_per_chat:
                raise CronError(
                    f"This chat already has {held} scheduled jobs, the most allowed "
                    f"(cron.max_jobs_per_chat); remove one first."
                )
        origin = creator.origin
        job = CronJob(
            id=uuid.uuid4().hex[:12],
            name=(spec.name.strip() or _default_name(prompt))[:255],
            prompt=prompt,
            schedule=schedule.text,
            deliver=deliver,
            created_by=creator.created_by,
            created_at=now,
            updated_at=now,
            skills=tuple(skills),
            origin_platform=origin.platform if origin else None,
            origin_route=origin.route if origin else None,
            origin_chat_id=origin.chat_id if origin else None,
            origin_thread_id=origin.thread_id if origin else None,
            origin_user_id=creator.user_id,
            next_run_at=schedule.first_run(now),
        )
        return await self.store.add(job)

    async def update(self, job: CronJob, changes: Mapping[str, Any], creator: Creator) -> CronJob:
        """Apply ``name``/``prompt``/``schedule``/``skills``/``deliver``; a new schedule
        counts from now."""
        now = self.clock.now()
        fields: dict[str, Any] = {}
        if changes.get("name") is not None:
            fields["name"] = str(changes["name"]).strip()[:255] or job.name
        if changes.get("prompt") is not None:
            fields["prompt"] = _checked_prompt(str(changes["prompt"]))
        if changes.get("schedule") is not None:
            schedule = self._parse(str(changes["schedule"]), now)
            fields["schedule"] = schedule.text
            fields["next_run_at"] = schedule.first_run(now)
        if changes.get("skills") is not None:
            fields["skills"] = tuple(await self._checked_skills(_names(changes["skills"])))
        if changes.get("deliver") is not None:
            fields["deliver"] = _checked_deliver(str(changes["deliver"]), creator)
        if not fields:
            raise CronError("Nothing to change: give name, prompt, schedule, skills or deliver.")
        await self._write(job, fields, now)
        return replace(job, **fields, updated_at=now)

    async def pause(self, job: CronJob) -> CronJob:
        await self._write(job, {"paused": True}, self.clock.now())
        return replace(job, paused=True)

    async def resume(self, job: CronJob) -> CronJob:
        """Unpause; a repeating job's next run counts from now, so missed runs are not made up."""
        now = self.clock.now()
        schedule = self.schedule_of(job)
        if schedule.recurring:
            next_run = schedule.next_after(now)
        elif job.next_run_at is None:
            raise CronError(f"Job {job.id} ran once already; its schedule is finished.")
        else:
            next_run = max(job.next_run_at, now)
        fields = {"paused": False, "next_run_at": next_run}
        await self._write(job, fields, now)
        return replace(job, paused=False, next_run_at=next_run)

    async def queue_run(self, job: CronJob) -> CronJob:
        """Make the job due now; the scheduler runs it at its next look."""
        if job.paused:
            raise CronError(f"Job {job.id} is paused; resume it first.")
        now = self.clock.now()
        await self._write(job, {"next_run_at": now}, now)
        return replace(job, next_run_at=now)

    async def remove(self, job: CronJob) -> None:
        if not await self.store.remove(job.id):
            raise CronError(f"No cron job {job.id}.")

    async def _write(self, job: CronJob, fields: Mapping[str, Any], now: float) -> None:
        if not await self.store.update(job.id, fields, now):
            raise CronError(f"No cron job {job.id}.")

    def _parse(self, text: str, now: float) -> Schedule:
        try:
            return parse_schedule(text, now=now, timezone=self.timezone)
        except ScheduleError as exc:
            raise CronError(str(exc)) from exc

    async def _checked_skills(self, names: Sequence[str]) -> list[str]:
        return await asyncio.to_thread(check_skill_names, self.skills_dir, list(names))


def _checked_prompt(prompt: str) -> str:
    text = prompt.strip()
    if not text:
        raise CronError("The prompt is empty: say what the job should do.")
    threat = scan(text)
    if threat is not None:
        raise CronError(f"The prompt was refused by the threat scan ({threat}).")
    return text


def _checked_deliver(text: str, creator: Creator) -> str:
    try:
        target = parse_target(text, model=creator.model)
    except TargetError as exc:
        raise CronError(str(exc)) from exc
    if isinstance(target, Origin) and creator.origin is None:
        raise CronError(
            "A job made from the shell has no chat of origin: give a delivery target "
            "such as 'PLATFORM:CHAT_ID', 'webhook/ROUTE:CHAT_ID' or 'file:PATH'."
        )
    return format_target(target)


def _names(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(item) for item in value]
    raise CronError("skills must be a list of skill names.")


def _default_name(prompt: str) -> str:
    first = " ".join(prompt.split())
    return first if len(first) <= NAME_CHARS else first[: NAME_CHARS - 1] + "…"
