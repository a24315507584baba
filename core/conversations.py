"""Conversations: from an accepted inbound message to stored, queued replies.

This is the core's front door. ``accept`` commits a message to the inbox and queues
it on its session's lane; ``handle`` runs a chat command or a model turn for it and
commits the outcome (transcript, replies, inbox status) in one transaction.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType

from core import compaction, status
from core.clock import Clock
from core.commands import STOP, Command, CommandRegistry
from core.compaction import CompactionSettings
from core.delivery_log import DeliveryLog
from core.errors import ModelError, ModelRequestError, RateLimited
from core.memory.provider import MemoryProviders, compose_user_api_content
from core.messages import ChatTarget, InboundMessage, OutboundMessage
from core.prompt.builder import CallerContext, PromptBuilder
from core.router import SessionRouter
from core.session_key import session_key
from core.sessions import CallerContextFor, MemoryBlocksFor, SessionKeeper, SessionState
from core.stats import CoreStats
from core.store.db import SessionDB
from core.store.records import (
    Accepted,
    InboxItem,
    LastSeen,
    NewMessage,
    SessionRow,
    TurnOutcome,
    TurnReplies,
)
from core.tasks import TaskSet
from core.tools import ToolContext
from core.turn import TurnResult, TurnRunner

log = logging.getLogger(__name__)

Deliver = Callable[[list[OutboundMessage]], Awaitable[object]]
StatusLines = Callable[[SessionRow], Awaitable[list[str]]]
TurnMaterial = Callable[[str, str], Awaitable[str | None]]
TurnDone = Callable[[SessionState, InboxItem, TurnResult], Awaitable[None]]


# /compact by hand summarises everything but the last exchange.
MANUAL_KEEP = 2


@dataclass(frozen=True, slots=True)
class ConversationSettings:
    group_sessions_per_user: bool = True
    # Per platform, overriding ``group_sessions_per_user`` (e.g. ``{"discord": False}``).
    group_sessions_by_platform: Mapping[str, bool] = dataclasses.field(default_factory=dict)
    idle_worker_seconds: float = 300.0
    session_cache_size: int = 4096
    compaction: CompactionSettings | None = CompactionSettings()


class Conversations:
    """See the module docstring. Use as an async context manager."""

    def __init__(
        self,
        db: SessionDB,
        runner: TurnRunner,
        prompts: PromptBuilder,
        commands: CommandRegistry,
        clock: Clock,
        settings: ConversationSettings,
        *,
        caller_context_for: CallerContextFor = lambda _msg: CallerContext(),
        memory_blocks_for: MemoryBlocksFor = lambda _msg: (),
        memory_providers: MemoryProviders | None = None,
    ) -> None:
        self.db = db
        self.runner = runner
        self.commands = commands
        self.stats = CoreStats()
        self._clock = clock
        self._settings = settings
        self._providers = memory_providers or MemoryProviders()
        self._deliverers: list[Deliver] = []
        self._status_lines: list[StatusLines] = []
        self._turn_material: list[TurnMaterial] = []
        self._turn_done: list[TurnDone] = []
        self.sessions = SessionKeeper(
            db,
            runner,
            prompts,
            clock,
            self._providers,
            caller_context_for=caller_context_for,
            memory_blocks_for=memory_blocks_for,
            cache_size=settings.session_cache_size,
            compaction_settings=settings.compaction,
        )
        self._tasks = TaskSet("conversations")
        self._delivery_log = DeliveryLog(db, clock)
        self.router = SessionRouter(
            self._handle, self._cancelled, idle_seconds=settings.idle_worker_seconds
        )

    async def __aenter__(self) -> Conversations:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._tasks.close()
        await self.router.close()
        await self._delivery_log.close()

    def on_replies(self, deliver: Deliver) -> None:
        """Call ``deliver`` with every batch of replies once it is committed."""
        self._deliverers.append(deliver)

    def on_turn_material(self, material: TurnMaterial) -> None:
        """Add ``material(text, platform)``'s text (if any) to this turn's API copy only."""
        self._turn_material.append(material)

    def on_turn_complete(self, hook: TurnDone) -> None:
        """Call ``hook(state, item, result)`` after a model turn committed its replies."""
        self._turn_done.append(hook)

    async def notify(
        self, target: ChatTarget, texts: Sequence[str], *, session_id: str | None = None
    ) -> list[OutboundMessage]:
        """Send ``texts`` to a chat unprompted (a review's note, a cron job's output)."""
        replies = await self.db.add_notices(target, texts, self._clock.now(), session_id)
        await self._push(replies)
        return replies

    def on_status(self, lines: StatusLines) -> None:
        """Add ``lines(session)`` to what ``/status`` reports for an open session."""
        self._status_lines.append(lines)

    # ingress
    async def accept(self, msg: InboundMessage) -> Accepted:
        """Commit ``msg`` to the inbox and queue it; a redelivery is not queued again."""
        s = self._settings
        per_user = s.group_sessions_by_platform.get(msg.platform, s.group_sessions_per_user)
        key = session_key(msg, group_sessions_per_user=per_user)
        accepted = await self.db.accept(msg, key)
        if not accepted.created:
            self.stats.duplicates[msg.platform] += 1
            return accepted
        self.stats.inbound[msg.platform] += 1
        self._dispatch(accepted.item)
        return accepted

    async def recover(self, up_to: int | None = None) -> int:
        """Queue every message accepted before a restart but never processed.

        ``up_to`` is the newest inbox id before the adapters started: what they accept
        from then on is dispatched as it arrives and must not be queued twice.
        """
        items = await self.db.pending_inbox(up_to)
        for item in items:
            if self.router.in_flight(item.id):
                continue
            self._dispatch(item)
        if items:
            log.info("recovered %d unprocessed inbound messages", len(items))
        return len(items)

    def replies(self, item: InboxItem) -> Awaitable[TurnReplies]:
        """``item``'s replies: the future its turn resolves while it is in flight."""
        if self.router.in_flight(item.id):
            return self.router.watch(item.id)
        return self._stored_replies(item)

    async def _stored_replies(self, item: InboxItem) -> TurnReplies:
        # Re-read the row: the turn may have finished after ``item`` was read.
        current = await self.db.inbox_item(item.id) or item
        replies = await self.db.replies_for(item.id)
        return TurnReplies(current.session_id, replies, pending=current.status == "pending")

    async def replies_after(
        self, *, platform: str, route: str | None, chat_id: str, after: int, limit: int
    ) -> list[OutboundMessage]:
        return await self.db.replies_after(
            platform=platform, route=route, chat_id=chat_id, after=after, limit=limit
        )

    async def last_seen(
        self, platform: str, since: float, until: float, limit: int = 500
    ) -> list[LastSeen]:
        return await self.db.last_seen(platform, since, until, limit)

    def command_menu(self) -> list[tuple[str, str]]:
        return [(c.name, c.summary) for c in self.commands.all()]

    async def parts_sent(self, outbox_id: int, parts: int) -> None:
        await self.db.note_parts_sent(outbox_id, parts)

    def delivered(self, ids: Sequence[int]) -> None:
        self._delivery_log.note(ids)

    def _dispatch(self, item: InboxItem) -> None:
        parsed = self.commands.parse(item.message.text)
        if parsed is not None and parsed[0].name == STOP:
            # /stop jumps the queue: it must reach the turn it is meant to cancel.
            self.router.watch(item.id)
            self._tasks.spawn(self._stop(item), name=f"stop:{item.session_key}")
            return
        self.router.submit(item)

    # processing
    async def _handle(self, item: InboxItem) -> TurnReplies:
        started = self._clock.now()
        parsed = self.commands.parse(item.message.text)
        if parsed is not None:
            return await self._command(item, *parsed)
        state = await self.sessions.current(item)
        notices: list[str] = []
        if self.sessions.compaction_due(state, item):
            compacted = await self.sessions.compact(state, item)
            if compacted is not None:
                state = compacted
                notices.append(compaction.NOTICE)
        try:
            result = await self._run_turn(state, item)
        except ModelError as exc:
            log.warning("turn %s failed: %s", item.id, exc.__class__.__name__)
            return await self._fail(item, state, failure_reply(exc), repr(exc), started)
        except Exception as exc:  # the one boundary where any bug becomes a clean reply
            log.exception("turn %s crashed", item.id)
            text = "Sorry, something went wrong on my side and this message was not answered."
            return await self._fail(item, state, text, repr(exc), started)
        return await self._complete(item, state, result, started, notices)

    async def _run_turn(self, state: SessionState, item: InboxItem) -> TurnResult:
        msg = item.message
        # Turn-only recall goes into the API copy of the user message, never the transcript.
        recall = await self._providers.prefetch(msg.text, session_id=state.row.id)
        api_content = compose_user_api_content(msg.text, recall)
        for material in self._turn_material:
            extra = await material(msg.text, msg.platform)
            if extra:
                api_content = f"{api_content or msg.text}\n\n{extra}"
        user = NewMessage(
            role="user",
            content=msg.text,
            api_content=api_content,
            created_at=msg.received_at,
            platform_message_id=msg.platform_message_id,
        )
        ctx = ToolContext(
            session_id=state.row.id,
            session_key=item.session_key,
            platform=msg.platform,
            chat_id=msg.chat_id,
            user_id=msg.user_id,
            thread_id=msg.thread_id,
            route=msg.route,
        )
        return await self.runner.run(
            system=state.row.system_prompt, history=state.history, user=user, ctx=ctx
        )

    async def _complete(
        self,
        item: InboxItem,
        state: SessionState,
        result: TurnResult,
        started: float,
        notices: Sequence[str] = (),
    ) -> TurnReplies:
        now = self._clock.now()
        outcome = TurnOutcome(
            item=item,
            status="done",
            processed_at=now,
            session_id=state.row.id,
            messages=result.messages,
            replies=[*notices, result.reply] if result.reply.strip() else list(notices),
            tool_calls=result.tool_calls,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            cache_read_tokens=result.cache_read_tokens,
            cache_write_tokens=result.cache_write_tokens,
        )
        replies = await self._finish(outcome)
        self._tasks.spawn(
            self._providers.sync_turn(item.message.text, result.reply, session_id=state.row.id),
            name=f"memory-sync:{item.session_key}",
        )
        state.history = result.api_view
        state.row = dataclasses.replace(
            state.row,
            turn_count=state.row.turn_count + 1,
            message_count=state.row.message_count + len(result.messages),
            last_active_at=now,
        )
        self.stats.observe_turn("done", now - started)
        for hook in self._turn_done:
            try:
                await hook(state, item, result)
            except Exception:  # the turn is committed and answered whatever a hook does
                log.exception("after-turn hook failed for inbox %s", item.id)
        return replies

    async def _fail(
        self, item: InboxItem, state: SessionState, reply: str, error: str, started: float
    ) -> TurnReplies:
        now = self._clock.now()
        outcome = TurnOutcome(
            item=item,
            status="failed",
            processed_at=now,
            session_id=state.row.id,
            replies=[reply],
            error=error[:2000],
        )
        self.stats.observe_turn("failed", now - started)
        return await self._finish(outcome)

    async def _cancelled(self, item: InboxItem) -> TurnReplies:
        state = self.sessions.cached(item.session_key)
        outcome = TurnOutcome(
            item=item,
            status="cancelled",
            processed_at=self._clock.now(),
            session_id=state.row.id if state else None,
            error="stopped by /stop",
        )
        self.stats.turns["cancelled"] += 1
        return await self._finish(outcome)

    async def _stop(self, item: InboxItem) -> None:
        stopped = self.router.cancel(item.session_key)
        text = "Stopped." if stopped else "Nothing is running."
        outcome = TurnOutcome(
            item=item, status="done", processed_at=self._clock.now(), replies=[text]
        )
        self.stats.commands[STOP] += 1
        replies = await self._finish(outcome)
        self.router.resolve(item.id, replies)

    async def _command(self, item: InboxItem, command: Command, args: str) -> TurnReplies:
        self.stats.commands[command.name] += 1
        reply = await command.handler(self, item, args)
        state = self.sessions.cached(item.session_key)
        if state is None and reply.end_session_reason is not None:
            row = await self.db.active_session(item.session_key)
            state = SessionState(row, []) if row is not None else None
        outcome = TurnOutcome(
            item=item,
            status="done",
            processed_at=self._clock.now(),
            session_id=state.row.id if state else None,
            replies=[reply.text],
            end_session_reason=reply.end_session_reason if state else None,
        )
        replies = await self._finish(outcome)
        if reply.end_session_reason is not None:
            self.sessions.forget(item.session_key)
            if state is not None:
                await self._providers.on_session_end(state.row.id)
        return replies

    async def _finish(self, outcome: TurnOutcome) -> TurnReplies:
        replies = await self.db.finish_turn(outcome)
        await self._push(replies)
        return TurnReplies(outcome.session_id, replies)

    async def _push(self, replies: list[OutboundMessage]) -> None:
        for deliver in self._deliverers:
            await deliver(replies)

    async def compact_session(self, item: InboxItem) -> str:
        state = await self.sessions.current(item)
        compacted = await self.sessions.compact(state, item, keep=MANUAL_KEEP)
        if compacted is None:
            return "Nothing to compact yet (or the model could not write the summary)."
        return compaction.NOTICE

    # CommandHost
    async def describe_status(self, item: InboxItem) -> str:
        state = self.sessions.cached(item.session_key)
        row = state.row if state else await self.db.active_session(item.session_key)
        extras = [await extra(row) for extra in self._status_lines] if row else []
        return status.render(
            [status.session_lines(row), *extras, status.model_lines(self.runner.model)]
        )

    def command_help(self) -> str:
        return self.commands.help_text()


def failure_reply(exc: ModelError) -> str:
    """One line a person can act on when the model could not answer."""
    if isinstance(exc, RateLimited):
        return "The model provider is rate-limiting requests; please try again in a minute."
    if isinstance(exc, ModelRequestError):
        return "The model provider refused the request; an administrator should check the logs."
    return "The model provider is not answering right now; please try again shortly."
