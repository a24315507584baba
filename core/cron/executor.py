"""A cron run's model turn: a fresh session, the core's tools minus ``cronjob``, one write.

Each run gets its own session (key ``cron:<job id>``) on the chat the job belongs to,
so the run is searchable from that chat like any conversation. Its system prompt is
built like any new session's, with guidance for unattended runs added to the context
tier. The session is stored, already ended, in one transaction once the turn is done.
"""

from __future__ import annotations

import dataclasses

from core.clock import Clock
from core.cron.delivery import resolve
from core.cron.prompt import CRON_RUN_GUIDANCE
from core.cron.service import CronOutput
from core.cron.tool import CRONJOB_TOOL
from core.errors import TargetError
from core.messages import ChatTarget, InboundMessage
from core.models.base import ModelClient
from core.prompt.builder import CallerContext
from core.sessions import CallerContextFor, SessionKeeper
from core.store.cron import CronJob
from core.store.db import SessionDB
from core.store.records import NewMessage
from core.tools import ToolContext, ToolRegistry
from core.turn import TurnRunner

REFUSAL = "scheduled tasks cannot create or change scheduled tasks"


class SessionExecutor:
    """Runs a job's assembled prompt as one turn of a fresh session; see the module docstring."""

    def __init__(
        self,
        db: SessionDB,
        sessions: SessionKeeper,
        model: ModelClient,
        tools: ToolRegistry,
        clock: Clock,
        caller_context_for: CallerContextFor,
        *,
        max_iterations: int,
    ) -> None:
        self._db = db
        self._sessions = sessions
        self._clock = clock
        self._caller_context_for = caller_context_for
        self._tools = tools.restricted(lambda name: name != CRONJOB_TOOL, REFUSAL)
        self._runner = TurnRunner(model, self._tools, clock, max_iterations=max_iterations)

    async def __call__(self, job: CronJob, prompt: str) -> CronOutput:
        chat = _chat_of(job)
        now = self._clock.now()
        msg = InboundMessage(
            platform=chat.platform,
            chat_id=chat.chat_id,
            user_id=job.origin_user_id or "cron",
            text=prompt,
            platform_message_id=f"cron-{job.id}",
            dedup_key=f"cron-{job.id}-{now}",
            received_at=now,
            thread_id=chat.thread_id,
            route=chat.route,
        )
        key = f"cron:{job.id}"
        base = self._caller_context_for(msg)
        guidance = "\n\n".join(p for p in (base.system_message, CRON_RUN_GUIDANCE) if p)
        caller = CallerContext(system_message=guidance, workspace=base.workspace)
        row = await self._sessions.new_row(msg, key, tool_names=self._tools.names(), caller=caller)
        user = NewMessage(role="user", content=prompt, created_at=now)
        ctx = ToolContext(
            row.id, key, chat.platform, chat.chat_id, msg.user_id, chat.thread_id, chat.route
        )
        offer = self._sessions.offer(row)
        result = await self._runner.run(
            system=row.system_prompt, history=[], user=user, ctx=ctx, offer=offer
        )
        finished = self._clock.now()
        stored = dataclasses.replace(
            row,
            last_active_at=finished,
            ended_at=finished,
            end_reason="cron",
            message_count=len(result.messages),
            turn_count=1,
            tool_call_count=result.tool_calls,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            cache_read_tokens=result.cache_read_tokens,
            cache_write_tokens=result.cache_write_tokens,
        )
        await self._db.record_detached(stored, result.messages)
        return CronOutput(row.id, result.reply)


def _chat_of(job: CronJob) -> ChatTarget:
    """The chat a run belongs to: where it delivers, else where it was made, else its own."""
    try:
        target = resolve(job)
    except TargetError:
        target = None
    if isinstance(target, ChatTarget):
        return target
    return job.origin or ChatTarget("cron", job.id)
