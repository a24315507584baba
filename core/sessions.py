"""Which session a chat is in: the active session, its cached transcript, compaction.

One active session per key lives in the SessionDB; this keeps the ones in use in an
LRU bounded by bytes (``core.session_cache``) with their transcripts as the model saw
them, lets an idle chat's transcript go (``idle``), opens a session (building and
storing its system prompt once) when a chat has none, and compacts a session into a
child session when asked (``compact``; when to do it is the compaction feature's call).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import secrets
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from core import compaction
from core.clock import Clock
from core.errors import ModelError
from core.hooks import TurnHooks
from core.messages import InboundMessage
from core.models.base import ModelClient
from core.people.marks import ForgetMarks, key_digest
from core.prompt.builder import CallerContext, PromptBuilder, PromptContext, PromptParts
from core.session_cache import SessionCache
from core.session_state import SessionState
from core.session_tools import SessionTools, ToolOffer, freeze, place_of
from core.store.db import SessionDB
from core.store.records import InboxItem, SessionRow
from core.tool_policy import ToolPlace
from core.turn import to_chat

log = logging.getLogger(__name__)

CallerContextFor = Callable[[InboundMessage], CallerContext]


class SessionKeeper:
    """See the module docstring. Only the session's own lane touches its state."""

    def __init__(
        self,
        db: SessionDB,
        model: ModelClient,
        tools: SessionTools,
        prompts: PromptBuilder,
        clock: Clock,
        hooks: TurnHooks,
        *,
        caller_context_for: CallerContextFor,
        cache_bytes: int,
        marks: ForgetMarks | None = None,
    ) -> None:
        self._db = db
        self._model = model
        self._tools = tools
        self._prompts = prompts
        self._clock = clock
        self._hooks = hooks
        self._caller_context_for = caller_context_for
        self._marks = marks
        self._sessions = SessionCache(cache_bytes)

    @property
    def cached_count(self) -> int:
        """Sessions whose transcript is in memory."""
        return len(self._sessions)

    @property
    def cached_bytes(self) -> int:
        """Their estimated bytes together (``SessionState.weigh``)."""
        return self._sessions.nbytes

    def cached(self, key: str) -> SessionState | None:
        self._drop_forgotten()
        return self._sessions.peek(key)

    def grew(self, key: str) -> None:
        """A turn added to ``key``'s transcript: weigh it again, within the byte cap."""
        self._sessions.reweigh(key)

    def idle(self, key: str) -> None:
        """``key``'s chat has gone quiet (its lane worker exited): let its transcript go.
        Its next message reads it back from the SessionDB."""
        self._sessions.pop(key)

    def _drop_forgotten(self) -> None:
        """Drop transcripts a forgetting in another process made stale (``core.people.marks``)."""
        if self._marks is None:
            return
        stale = self._marks.stale_keys()
        if stale:
            for key in [k for k in self._sessions if key_digest(k) in stale]:
                self._sessions.pop(key)

    def forget(self, key: str) -> None:
        self._sessions.pop(key)

    async def current(self, item: InboxItem) -> SessionState:
        """The chat's active session and its transcript, opening a session if none is."""
        key = item.session_key
        self._drop_forgotten()
        state = self._sessions.use(key)
        if state is not None:
            return state
        row = await self._db.active_session(key) or await self._open(item)
        if row.tool_specs is None:  # opened before tool lists were frozen: freeze it now
            specs = freeze(self._tools.offered(place_of(row)))
            row = dataclasses.replace(row, tool_specs=await self._db.freeze_tools(row.id, specs))
        await self._hooks.started(row)
        # A session opened just now has no transcript to read back.
        stored = await self._db.history(row.id) if row.message_count else []
        state = SessionState(row, [to_chat(m) for m in stored])
        self._sessions.put(key, state)
        return state

    def offer(self, row: SessionRow) -> ToolOffer:
        """The tools a turn of ``row``'s session sends and may call."""
        return self._tools.offer(row)

    def tool_change_line(self, row: SessionRow) -> str | None:
        """``/status``: how a new session's tools would differ from ``row``'s, if they do."""
        return self._tools.change_line(row)

    async def _open(self, item: InboxItem) -> SessionRow:
        return await self._db.open_session(await self.new_row(item.message, item.session_key))

    async def new_row(
        self,
        msg: InboundMessage,
        key: str,
        *,
        parent_id: str | None = None,
        message_count: int = 0,
        tool_names: Sequence[str] | None = None,
        caller: CallerContext | None = None,
    ) -> SessionRow:
        """A session for ``msg``'s chat under ``key``, its system prompt built and frozen.

        The tools the chat's policy allows are frozen with it (``core.session_tools``);
        ``tool_names`` narrows them and ``caller`` overrides the chat's caller context (a
        scheduled run has no ``cronjob`` tool and its own guidance).
        """
        now = self._clock.now()
        stamp = datetime.fromtimestamp(now, tz=UTC).strftime("%Y%m%d_%H%M%S")
        session_id = f"{stamp}_{secrets.token_hex(4)}"
        model = self._model
        place = ToolPlace(msg.platform, msg.chat_id, msg.route)
        specs = self._tools.offered(place, tool_names)
        names = [s.name for s in specs]
        caller = caller or self._caller_context_for(msg)

        def build() -> tuple[PromptParts, str]:
            # Reads the memory files, SOUL.md and any workspace context: off the loop.
            parts = self._prompts.build(
                PromptContext(
                    session_id=session_id,
                    platform=msg.platform,
                    provider=model.provider,
                    model=model.model,
                    started_at=now,
                    tool_names=names,
                    caller=caller,
                    memory_blocks=self._hooks.blocks(msg, names),
                )
            )
            return parts, freeze(specs)

        parts, frozen = await asyncio.to_thread(build)
        return SessionRow(
            id=session_id,
            session_key=key,
            platform=msg.platform,
            chat_id=msg.chat_id,
            thread_id=msg.thread_id,
            user_id=msg.user_id,
            route=msg.route,
            started_at=now,
            last_active_at=now,
            provider=model.provider,
            model=model.model,
            system_prompt=parts.join(),
            prompt_tiers=parts.sizes(),
            tool_specs=frozen,
            parent_session_id=parent_id,
            message_count=message_count,
        )

    async def compact(
        self, state: SessionState, item: InboxItem, *, keep: int
    ) -> SessionState | None:
        """Summarise all but the last ``keep`` messages into a child session; None when
        there is too little to compact or the model could not write the summary."""
        cut = compaction.plan(await self._db.history(state.row.id), keep)
        if cut is None:
            return None
        notes = await self._hooks.compaction_notes(state.row, cut.older)
        try:
            summary = await compaction.summarise(self._model, cut.older, notes)
        except ModelError as exc:
            log.warning("compaction of %s skipped: %s", state.row.id, exc.__class__.__name__)
            return None
        now = self._clock.now()
        opening = compaction.child_messages(summary, cut.recent, now)
        child = await self.new_row(
            item.message, item.session_key, parent_id=state.row.id, message_count=len(opening)
        )
        row = await self._db.compact(state.row.id, now, child, opening)
        await self._hooks.ended(state.row.id)
        await self._hooks.started(row)
        compacted = SessionState(row, [to_chat(m) for m in compaction.as_stored(opening)])
        self._sessions.put(item.session_key, compacted)
        log.info("session %s compacted into %s", state.row.id, row.id)
        return compacted
