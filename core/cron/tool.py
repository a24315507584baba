"""The ``cronjob`` tool: the model schedules prompts for the chat it is talking in.

A chat sees and changes only its own jobs, delivers only back to itself or to a file in
the cron output folder, and holds at most ``cron.max_jobs_per_chat`` jobs. The tool is
left out of a cron run's own tool list, so a scheduled run cannot schedule more runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from core.cron.jobs import Creator, CronJobs, JobSpec
from core.errors import CronError
from core.messages import ChatTarget
from core.models.base import ToolSpec
from core.store.cron import CronJob
from core.tools import ToolContext

CRONJOB_TOOL = "cronjob"
ACTIONS = ("create", "list", "update", "pause", "resume", "run", "remove")

CRONJOB_SPEC = ToolSpec(
    name=CRONJOB_TOOL,
    description=(
        "Schedule a prompt to run later in a fresh session; its answer is sent to this chat "
        "(or to deliver='file:<name>'). action create needs prompt and schedule: '30m' (once, "
        "30 minutes from now), 'every 2h', a cron expression like '0 9 * * mon-fri', or an "
        "ISO time. skills: names of skills to load for each run. The answer is not sent when "
        "it starts with [SILENT]. list shows this chat's jobs; update, pause, resume, run "
        "(now) and remove take job_id."
    ),
    parameters={
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "job_id": {"type": "string"},
            "prompt": {"type": "string", "description": "what the run should do, self-contained"},
            "schedule": {"type": "string"},
            "name": {"type": "string"},
            "skills": {"type": "array", "items": {"type": "string"}},
            "deliver": {"type": "string", "description": "'origin' (default) or 'file:<name>'"},
        },
        "required": ["action"],
    },
)

OriginOf = Callable[[ToolContext], ChatTarget]


def context_origin(ctx: ToolContext) -> ChatTarget:
    """The calling chat, with its thread and (for webhook chats) route."""
    return ChatTarget(ctx.platform, ctx.chat_id, ctx.thread_id, ctx.route)


class CronJobTool:
    """The ``cronjob`` tool over ``jobs``; ``wake`` tells the scheduler a run was queued."""

    def __init__(
        self,
        jobs: CronJobs,
        *,
        wake: Callable[[], None] = lambda: None,
        origin_of: OriginOf = context_origin,
    ) -> None:
        self._jobs = jobs
        self._wake = wake
        self._origin_of = origin_of

    @property
    def spec(self) -> ToolSpec:
        return CRONJOB_SPEC

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            payload = await self._dispatch(args, ctx)
        except CronError as exc:
            payload = {"success": False, "error": str(exc)}
        return json.dumps(payload, ensure_ascii=False)

    async def _dispatch(self, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        action = args.get("action")
        origin = self._origin_of(ctx)
        creator = Creator("model", origin, ctx.user_id)
        if action == "create":
            job = await self._jobs.create(_spec(args), creator)
            return {"success": True, "job": job_view(job)}
        if action == "list":
            jobs = await self._jobs.store.jobs(origin)
            return {"success": True, "jobs": [job_view(j) for j in jobs], "count": len(jobs)}
        if action not in ACTIONS:
            raise CronError(f"Unknown action {action!r}; use one of {', '.join(ACTIONS)}.")
        job = await self._own_job(args, origin)
        if action == "update":
            job = await self._jobs.update(job, args, creator)
        elif action == "pause":
            job = await self._jobs.pause(job)
        elif action == "resume":
            job = await self._jobs.resume(job)
        elif action == "run":
            job = await self._jobs.queue_run(job)
            self._wake()
            return {"success": True, "job": job_view(job), "message": "Queued to run now."}
        else:
            await self._jobs.remove(job)
            return {"success": True, "removed": job.id}
        return {"success": True, "job": job_view(job)}

    async def _own_job(self, args: dict[str, Any], origin: ChatTarget) -> CronJob:
        job_id = args.get("job_id")
        if not isinstance(job_id, str) or not job_id.strip():
            raise CronError("job_id is required; see action 'list'.")
        job = await self._jobs.store.get(job_id.strip())
        if job is None or job.origin != origin:
            raise CronError(f"No job {job_id!r} in this chat; see action 'list'.")
        return job


def _spec(args: dict[str, Any]) -> JobSpec:
    prompt, schedule = args.get("prompt"), args.get("schedule")
    if not isinstance(prompt, str) or not isinstance(schedule, str):
        raise CronError("create needs prompt and schedule (both text).")
    skills = args.get("skills") or []
    if isinstance(skills, str):
        skills = [skills]
    if not isinstance(skills, list):
        raise CronError("skills must be a list of skill names.")
    return JobSpec(
        prompt=prompt,
        schedule=schedule,
        name=str(args.get("name") or ""),
        skills=[str(name) for name in skills],
        deliver=str(args.get("deliver") or "origin"),
    )


def job_view(job: CronJob) -> dict[str, Any]:
    """What the model reads about a job."""
    return {
        "job_id": job.id,
        "name": job.name,
        "schedule": job.schedule,
        "prompt": job.prompt,
        "skills": list(job.skills),
        "deliver": job.deliver,
        "paused": job.paused,
        "next_run": _iso(job.next_run_at),
        "last_run": _iso(job.last_run_at),
        "last_status": job.last_status,
        "last_error": job.last_error,
        "run_count": job.run_count,
    }


def _iso(at: float | None) -> str | None:
    if at is None:
        return None
    return datetime.fromtimestamp(at, tz=UTC).isoformat(timespec="seconds")
