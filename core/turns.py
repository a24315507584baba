"""Turns: one accepted inbound message to a committed outcome.

Each piece of work is a chat command or a model turn. Its outcome (the transcript, the
replies, the inbox row's status) is committed in one transaction, then the replies go
to the outbox for delivery. A model that fails, or a bug anywhere in the turn, becomes
a reply a person can act on and a ``failed`` row, never a silent drop; ``/stop``
cancels the turn running for a chat. A store that cannot write is no bug of the turn:
``core.turn_commit`` keeps retrying the commit (or the work, when it met the outage
before it had an outcome) until the store writes again or the message is too old.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence

from core import turn_limits
from core.clock import Clock
from core.commands import STOP, UNKNOWN_COMMAND, CommandHost, Invocation, command_token
from core.errors import (
    ModelError,
    ModelRequestError,
    RateLimited,
    StoreUnavailable,
    TurnSuspended,
    TurnTimedOut,
)
from core.hooks import TurnHooks, TurnStart
from core.media.intake import MediaIntake
from core.messages import ChatTarget
from core.outbox import Outbox
from core.record import record
from core.session_state import SessionState
from core.sessions import SessionKeeper
from core.stats import CoreStats
from core.store.db import SessionDB
from core.store.records import Approval, InboxItem, NewMessage, TurnOutcome, TurnReplies
from core.streaming import Streaming, TurnPreview
from core.tools import ToolContext
from core.turn import CallGate, TurnResult, TurnRunner, sent_files
from core.turn_commit import TurnCommitter
from core.turn_context import scope
from core.turn_watch import TurnWatch
from core.usage.attribution import attributed, for_message
from core.usage.gate import BudgetGate

log = logging.getLogger(__name__)

CRASHED = "Sorry, something went wrong on my side and this message was not answered."
# The gate each model turn's tool calls pass (approvals), for its inbox item.
GateFor = Callable[[InboxItem], CallGate]


@record
class Work:
    """An inbox item on its way through a chat's lane, with the command it invokes
    (parsed once, when it was dispatched)."""

    item: InboxItem
    command: Invocation | None = None
    # When it was queued on its lane (clock seconds), for the inbox-wait histogram.
    queued_at: float | None = None
    # Accepted before a restart: its turn may have paused for an approval, and resumes.
    recovered: bool = False

    @property
    def id(self) -> int:
        return self.item.id

    @property
    def session_key(self) -> str:
        return self.item.session_key

    @property
    def session_id(self) -> str | None:
        return self.item.session_id


class TurnProcessor:
    """See the module docstring. Called by the session router, one item per lane."""

    def __init__(
        self,
        db: SessionDB,
        runner: TurnRunner,
        sessions: SessionKeeper,
        hooks: TurnHooks,
        host: CommandHost,
        outbox: Outbox,
        clock: Clock,
        stats: CoreStats,
        watch: TurnWatch,
        commits: TurnCommitter,
        gate_for: GateFor | None = None,
        *,
        streaming: Streaming | None = None,
        intake: MediaIntake | None = None,
        budgets: BudgetGate | None = None,
    ) -> None:
        self._db = db
        self._budgets = budgets
        self._streaming = streaming or Streaming({})
        self._intake = intake or MediaIntake()
        # A preview a run of an item's turn showed, for a run again after the store failed.
        self._shown: dict[int, str] = {}
        self._gate_for = gate_for
        self._commits = commits
        self._runner = runner
        self._sessions = sessions
        self._hooks = hooks
        self._host = host
        self._outbox = outbox
        self._clock = clock
        self._stats = stats
        self._watch = watch

    async def handle(self, work: Work) -> TurnReplies:
        """Run ``work``'s command or model turn and commit what it produced; run it again
        if the store could not write before it had an outcome (module docstring)."""
        msg = work.item.message
        with scope(work.id), for_message(msg.platform, msg.chat_id, msg.user_id, msg.route):
            self._waited(work)
            try:
                return await self._handle_until_stored(work)
            finally:
                self._shown.pop(work.id, None)

    async def _handle_until_stored(self, work: Work) -> TurnReplies:
        backoff = self._commits.backoff()
        while True:
            try:
                return await self._handle_once(work)
            except StoreUnavailable:
                if self._commits.expired(work.item):
                    return await self._give_up(work)
                await self._commits.pause(backoff)

    def _waited(self, work: Work) -> None:
        if work.queued_at is not None:
            wait = self._clock.now() - work.queued_at
            self._stats.inbox_wait_seconds.observe((work.item.message.platform,), wait)

    async def _handle_once(self, work: Work) -> TurnReplies:
        if work.command is not None:
            return await self._command(work.item, work.command)
        item = work.item
        paused = await self._db.approvals.latest_for_inbox(item.id) if work.recovered else None
        if paused is None and await self._unknown_command(item):
            return await self._finish(self._reply_only(item, UNKNOWN_COMMAND))
        over = await self._budgets.refusal(item.message) if self._budgets and not paused else None
        if over is not None:  # a budget is used up (``core.usage.gate``)
            return await self._finish(self._reply_only(item, over))  # the model is not called
        started = self._clock.now()
        partial = TurnResult()  # what the turn did, should its time bound cut it short
        if paused is None:
            start = await self._hooks.prepare(TurnStart(await self._sessions.current(item)), item)
            state, notices = start.state, start.notices
        else:  # it paused for an approval before a restart: go on from its stored work
            state, notices = await self._sessions.current(item), []
        shown = self._shown.get(item.id, item.preview_id)
        preview = self._streaming.open(item.id, item.message, shown)
        with attributed(session_id=state.row.id):
            turn = self._run_turn(state, item, partial, preview, paused)
            return await self._model_turn(item, state, turn, partial, started, notices, preview)

    async def _model_turn(
        self,
        item: InboxItem,
        state: SessionState,
        turn: Awaitable[TurnResult],
        partial: TurnResult,
        started: float,
        notices: Sequence[str],
        preview: TurnPreview,
    ) -> TurnReplies:
        try:
            result = await turn
        except asyncio.CancelledError:  # /stop, or a stop past the grace: no reply takes it
            await preview.discard()
            raise
        except StoreUnavailable:  # not the turn's bug: ``handle`` runs it again
            await self._keep_preview(item, preview)
            raise
        except TurnSuspended:  # stored while it waited: it resumes at the next start
            await preview.finish()
            return TurnReplies(state.row.id, [], pending=True)
        except TurnTimedOut as exc:
            log.warning("turn %s stopped: %s", item.id, exc.__class__.__name__)
            result = self._runner.stop(partial, turn_limits.timeout(exc.seconds))
        except ModelError as exc:
            log.warning("turn %s failed: %s", item.id, exc.__class__.__name__)
            shown = await preview.finish()
            return await self._fail(item, state, failure_reply(exc), repr(exc), started, shown)
        except Exception as exc:  # the one boundary where any bug becomes a clean reply
            log.exception("turn %s crashed", item.id)
            shown = await preview.finish()
            return await self._fail(item, state, CRASHED, repr(exc), started, shown)
        if result.reply.strip() or notices:
            shown = await preview.finish()
        else:  # no text to take the preview over (files alone, or nothing): take it away
            await preview.discard()
            shown = None
        return await self._complete(item, state, result, started, notices, shown)

    async def _keep_preview(self, item: InboxItem, preview: TurnPreview) -> None:
        shown = await preview.finish()
        if shown is not None:
            self._shown[item.id] = shown

    async def cancelled(self, work: Work) -> TurnReplies:
        """Commit the outcome of a turn ``/stop`` cancelled."""
        state = self._sessions.cached(work.session_key)
        outcome = TurnOutcome(
            item=work.item,
            status="cancelled",
            processed_at=self._clock.now(),
            session_id=state.row.id if state else None,
            error="stopped by /stop",
        )
        self._stats.turns[work.item.message.platform, "cancelled"] += 1
        return await self._finish(outcome)

    async def stopped(self, work: Work, *, stopped: bool) -> TurnReplies:
        """Answer a ``/stop``: whether it cancelled a running turn."""
        text = "Stopped." if stopped else "Nothing is running."
        self._stats.commands[STOP] += 1
        return await self._finish(self._reply_only(work.item, text))

    async def _unknown_command(self, item: InboxItem) -> bool:
        """A ``/word`` no command and no feature (a skill) answers: the model never sees it."""
        if command_token(item.message.text) is None or await self._hooks.claimed(item.message):
            return False
        self._stats.commands["unknown"] += 1
        return True

    def _reply_only(self, item: InboxItem, text: str) -> TurnOutcome:
        """An answer outside any session: no transcript, no session opened."""
        return TurnOutcome(item=item, status="done", processed_at=self._clock.now(), replies=[text])

    async def _run_turn(
        self,
        state: SessionState,
        item: InboxItem,
        partial: TurnResult,
        preview: TurnPreview,
        paused: Approval | None = None,
    ) -> TurnResult:
        msg = item.message
        ctx = ToolContext(
            session_id=state.row.id,
            session_key=item.session_key,
            platform=msg.platform,
            chat_id=msg.chat_id,
            user_id=msg.user_id,
            thread_id=msg.thread_id,
            route=msg.route,
        )
        so_far = (
            list(paused.turn_messages) if paused is not None else [await self._user(state, item)]
        )
        run = self._runner.resume(
            system=state.row.system_prompt,
            history=state.history,
            so_far=so_far,
            ctx=ctx,
            offer=self._sessions.offer(state.row),
            result=partial,
            gate=self._gate_for(item) if self._gate_for is not None else None,
            preview=preview,
            wire=state.wire,
        )
        return await self._watch.run(run, ChatTarget.of(msg), state.row.id)

    async def _user(self, state: SessionState, item: InboxItem) -> NewMessage:
        msg = item.message
        given = await self._intake.read(msg)  # attachments: images, transcripts, documents
        said = msg if given.text == msg.text else dataclasses.replace(msg, text=given.text)
        # Turn-only material goes into the API copy of the user message, never the transcript.
        api_content = await self._hooks.api_content(said, state.row)
        if given.material:
            api_content = "\n\n".join([api_content or said.text, *given.material])
        return NewMessage(
            role="user",
            content=said.text,
            api_content=api_content,
            created_at=msg.received_at,
            platform_message_id=msg.platform_message_id,
            media=tuple(given.media),
            user_id=msg.user_id,
        )

    async def _complete(
        self,
        item: InboxItem,
        state: SessionState,
        result: TurnResult,
        started: float,
        notices: Sequence[str] = (),
        preview_id: str | None = None,
    ) -> TurnReplies:
        files = [*sent_files(result.messages), *await self._hooks.files_for(item, result.reply)]
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
            preview_id=preview_id,
            files=files,
        )
        committed = await self._commits.commit(outcome)
        await self._outbox.publish(committed.replies)
        if committed.outcome.status != "done":  # given up: nothing of the turn was stored
            self._stats.observe_turn(item.message.platform, "failed", now - started)
            return TurnReplies(outcome.session_id, committed.replies)
        state.history = result.api_view
        state.row = dataclasses.replace(
            state.row,
            turn_count=state.row.turn_count + 1,
            message_count=state.row.message_count + len(result.messages),
            last_active_at=now,
        )
        self._sessions.grew(item.session_key)
        self._stats.observe_turn(item.message.platform, "done", now - started)
        log.debug("turn done in %.3f s", now - started)
        await self._hooks.finished(state, item, result)
        return TurnReplies(outcome.session_id, committed.replies)

    async def _fail(
        self,
        item: InboxItem,
        state: SessionState,
        reply: str,
        error: str,
        started: float,
        preview_id: str | None = None,
    ) -> TurnReplies:
        now = self._clock.now()
        outcome = TurnOutcome(
            item=item,
            status="failed",
            processed_at=now,
            session_id=state.row.id,
            replies=[reply],
            error=error[:2000],
            preview_id=preview_id,  # the line replaces what the preview showed
        )
        self._stats.observe_turn(item.message.platform, "failed", now - started)
        return await self._finish(outcome)

    async def _command(self, item: InboxItem, invocation: Invocation) -> TurnReplies:
        command, args = invocation
        self._stats.commands[command.name] += 1
        reply = await command.handler(self._host, item, args)
        state = self._sessions.cached(item.session_key)
        if state is None and reply.end_session_reason is not None:
            row = await self._db.active_session(item.session_key)
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
            self._sessions.forget(item.session_key)
            if state is not None:
                await self._hooks.ended(state.row.id)
        return replies

    async def _finish(self, outcome: TurnOutcome) -> TurnReplies:
        committed = await self._commits.commit(outcome)
        await self._outbox.publish(committed.replies)
        return TurnReplies(outcome.session_id, committed.replies)

    async def _give_up(self, work: Work) -> TurnReplies:
        state = self._sessions.cached(work.session_key)
        session_id = state.row.id if state else work.session_id
        return await self._finish(self._commits.given_up(work.item, session_id))


def failure_reply(exc: ModelError) -> str:
    """One line a person can act on when the model could not answer."""
    if isinstance(exc, RateLimited):
        return "The model provider is rate-limiting requests; please try again in a minute."
    if isinstance(exc, ModelRequestError):
        return "The model provider refused the request; an administrator should check the logs."
    return "The model provider is not answering right now; please try again shortly."
