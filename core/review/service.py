"""Background reviews: scheduled after a reply, run beside the chat, never in its way.

After a completed turn the session's counters advance; when one reaches its interval a
review is recorded (``scheduled``) and started as a tracked task. The review:

- waits until the chat's lane is idle, so the reply that triggered it is out first and
  any message the person sends meanwhile is answered before the review's next step;
- makes its model calls under its own concurrency limit, never holding a chat's lane;
- forks the session: the parent's stored system prompt, byte for byte, the conversation
  so far and a review instruction, with only the memory and skill tools (anything else
  is refused), at most ``max_iterations`` model calls and no compaction;
- calls its tools with ``origin="background_review"`` on the tool context, so skills it
  creates are the agent's;
- is recorded in ``reviews``, never in the chat's transcript, and may tell the chat
  what changed.

A review scheduled before a crash is run again at the next start.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from core.clock import Clock
from core.errors import ModelError
from core.messages import ChatTarget
from core.models.base import ChatMessage, ModelClient, ModelReply, ModelRequest, ModelWrapper
from core.models.wire import WireCache
from core.record import record
from core.review import prompts
from core.review.cadence import Counters, Intervals, derive, kinds_text, parse_kinds
from core.session_state import SessionState
from core.store.db import SessionDB
from core.store.records import InboxItem, NewMessage, SessionRow
from core.store.reviews import ReviewOutcome
from core.tasks import TaskSet
from core.tools import ToolContext, ToolRegistry
from core.turn import TurnResult, TurnRunner, to_chat

log = logging.getLogger(__name__)

REVIEW_TOOLS = ("memory", "skills_list", "skill_view", "skill_manage")
UntilIdle = Callable[[str], Awaitable[None]]
Notify = Callable[[ChatTarget, Sequence[str], str], Awaitable[Any]]


@record
class ReviewPolicy:
    intervals: Intervals = Intervals()
    concurrency: int = 1
    max_iterations: int = 16
    notify: bool = True


@record
class ReviewJob:
    review_id: int
    kinds: tuple[str, ...]
    session: SessionRow
    history: list[ChatMessage]
    ctx: ToolContext
    resumed: bool = False
    # The parent session's encoded messages: the review's request reuses its prefix.
    wire: WireCache | None = None


class ReviewService:
    """See the module docstring. ``close`` cancels running reviews (they rerun at start)."""

    def __init__(
        self,
        db: SessionDB,
        model: ModelClient,
        tools: ToolRegistry,
        clock: Clock,
        policy: ReviewPolicy,
        *,
        until_idle: UntilIdle,
        notify: Notify,
        cache_size: int = 4096,
    ) -> None:
        self._db = db
        self._model = model
        self._tools = tools.restricted(REVIEW_TOOLS.__contains__, prompts.REFUSAL)
        self._clock = clock
        self.policy = policy
        self._until_idle = until_idle
        self._notify = notify
        self._cache_size = cache_size
        self._counters: OrderedDict[str, Counters] = OrderedDict()
        self._slots = asyncio.Semaphore(policy.concurrency)
        self._tasks = TaskSet("review")
        self.outcomes: dict[str, int] = {"scheduled": 0, "done": 0, "failed": 0}

    @property
    def running(self) -> int:
        return len(self._tasks)

    async def close(self) -> None:
        await self._tasks.close()

    async def wait(self) -> None:
        """Return once every scheduled review has finished (for tests and shutdown drains)."""
        await self._tasks.wait()

    # after each completed turn (Conversations.on_turn_complete)
    async def turn_completed(
        self, state: SessionState, item: InboxItem, result: TurnResult
    ) -> None:
        row, history = state.row, state.history
        counters = self._counters.get(row.id)
        if counters is None:
            counters = await self._derive(row.id, history)  # already counts this turn
        else:
            self._counters.move_to_end(row.id)
            counters.observe(history[len(history) - len(result.messages) :])
        kinds = counters.due(self.policy.intervals)
        if not kinds:
            return
        counters.reset(kinds)
        msg = item.message
        ctx = ToolContext(
            row.id,
            item.session_key,
            msg.platform,
            msg.chat_id,
            msg.user_id,
            thread_id=msg.thread_id,
            route=msg.route,
            origin="background_review",
        )
        await self._schedule(row, list(history), kinds, ctx, state.wire)

    async def _derive(self, session_id: str, history: Sequence[ChatMessage]) -> Counters:
        marks = await self._db.reviews.marks(session_id)
        counters = self._counters[session_id] = derive(history, marks)
        while len(self._counters) > self._cache_size:
            self._counters.popitem(last=False)
        return counters

    async def _schedule(
        self,
        row: SessionRow,
        history: list[ChatMessage],
        kinds: tuple[str, ...],
        ctx: ToolContext,
        wire: WireCache,
    ) -> None:
        # The row is written by the review's own task, off the chat's lane: the reply that
        # triggered the review does not wait for it. A crash before the write loses
        # nothing, since the counters derived at the next start are still past the interval.
        self.outcomes["scheduled"] += 1
        job = self._record_and_run(row, history, kinds, ctx, wire)
        self._tasks.spawn(job, name=ctx.session_key)

    async def _record_and_run(
        self,
        row: SessionRow,
        history: list[ChatMessage],
        kinds: tuple[str, ...],
        ctx: ToolContext,
        wire: WireCache,
    ) -> None:
        review_id = await self._db.reviews.schedule(
            session_id=row.id,
            session_key=ctx.session_key,
            kinds=kinds_text(kinds),
            at_message_count=len(history),
            at=self._clock.now(),
        )
        await self._run(ReviewJob(review_id, kinds, row, history, ctx, wire=wire))

    async def resume_unfinished(self) -> int:
        """Run the reviews a previous process scheduled but did not finish."""
        pending = await self._db.reviews.unfinished()
        for review in pending:
            row = await self._db.session(review.session_id)
            if row is None:
                continue
            stored = await self._db.history(row.id)
            history = [to_chat(m) for m in stored[: review.at_message_count]]
            ctx = ToolContext(
                row.id,
                review.session_key,
                row.platform,
                row.chat_id,
                row.user_id or "",
                thread_id=row.thread_id,
                route=row.route,
                origin="background_review",
            )
            job = ReviewJob(review.id, parse_kinds(review.kinds), row, history, ctx, resumed=True)
            self._tasks.spawn(self._run(job), name=f"{review.session_key}#{review.id}")
        if pending:
            log.info("resuming %d background reviews", len(pending))
        return len(pending)

    # /status
    async def left(self, row: SessionRow) -> tuple[int | None, int | None]:
        counters = self._counters.get(row.id)
        if counters is None:
            history = [to_chat(m) for m in await self._db.history(row.id)]
            counters = await self._derive(row.id, history)
        return counters.left(self.policy.intervals)

    # the review itself
    async def _run(self, job: ReviewJob) -> None:
        key = job.ctx.session_key
        await self._until_idle(key)  # the reply that triggered us goes out first
        now = self._clock.now()
        started = await self._db.reviews.start(job.review_id, now, resume=job.resumed)
        if not started:
            return  # another replica has it
        runner = TurnRunner(
            _YieldingModel(self._model, self._slots, lambda: self._until_idle(key)),
            self._tools,
            self._clock,
            max_iterations=self.policy.max_iterations,
        )
        user = NewMessage(
            role="user", content=prompts.instruction(job.kinds), created_at=self._clock.now()
        )
        try:
            result = await runner.run(
                system=job.session.system_prompt,
                history=job.history,
                user=user,
                ctx=job.ctx,
                wire=job.wire,
            )
        except ModelError as exc:
            log.warning("review %s failed: %s", job.review_id, exc.__class__.__name__)
            await self._finish(job, _failed(self._clock.now(), repr(exc)))
            return
        except Exception as exc:  # a broken review must never reach the chat
            log.exception("review %s crashed", job.review_id)
            await self._finish(job, _failed(self._clock.now(), repr(exc)))
            return
        lines = prompts.changes(result.messages)
        await self._finish(job, _outcome(self._clock.now(), result, lines))
        if lines and self.policy.notify:
            target = ChatTarget(
                job.session.platform, job.session.chat_id, job.session.thread_id, job.session.route
            )
            await self._notify(target, [prompts.notice(lines)], job.session.id)

    async def _finish(self, job: ReviewJob, outcome: ReviewOutcome) -> None:
        await self._db.reviews.finish(job.review_id, outcome)
        self.outcomes[outcome.status] = self.outcomes.get(outcome.status, 0) + 1


class _YieldingModel(ModelWrapper):
    """The parent's model, but each call waits for the chat's lane to be idle and then
    for a review slot. The slot is held only for the call itself, so a review waiting
    on a busy chat never keeps other chats' reviews from running."""

    def __init__(
        self,
        inner: ModelClient,
        slots: asyncio.Semaphore,
        until_idle: Callable[[], Awaitable[None]],
    ) -> None:
        super().__init__(inner)
        self._slots = slots
        self._until_idle = until_idle

    async def complete(self, request: ModelRequest) -> ModelReply:
        await self._until_idle()
        async with self._slots:
            return await self._inner.complete(request)

    async def aclose(self) -> None:
        return None  # the parent owns the client


def _failed(at: float, error: str) -> ReviewOutcome:
    return ReviewOutcome("failed", at, 0, [], [], error=error[:2000])


def _outcome(at: float, result: TurnResult, lines: list[str]) -> ReviewOutcome:
    transcript = [
        {k: v for k, v in dataclasses.asdict(m).items() if v is not None and k != "created_at"}
        for m in result.messages
    ]
    return ReviewOutcome(
        "done",
        at,
        sum(1 for m in result.messages if m.role == "assistant"),
        lines,
        transcript,
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        cache_read_tokens=result.cache_read_tokens,
    )
