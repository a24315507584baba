"""Which session a chat is in: the active session, its cached transcript, compaction.

One active session per key lives in the SessionDB; this keeps the ones in use in an
LRU with their transcripts as the model saw them, opens a session (building and
storing its system prompt once) when a chat has none, and compacts a session that
outgrew the context into a child session.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from core import compaction
from core.clock import Clock
from core.compaction import CompactionSettings
from core.errors import ModelError
from core.memory.provider import MemoryProviders
from core.messages import InboundMessage
from core.models.base import ChatMessage
from core.prompt.builder import CallerContext, PromptBuilder, PromptContext
from core.store.db import SessionDB
from core.store.records import InboxItem, SessionRow
from core.turn import TurnRunner, to_chat

log = logging.getLogger(__name__)

CallerContextFor = Callable[[InboundMessage], CallerContext]
MemoryBlocksFor = Callable[[InboundMessage], Sequence[str]]


@dataclass(slots=True)
class SessionState:
    """A session row and its transcript as the model saw it (the next request's prefix)."""

    row: SessionRow
    history: list[ChatMessage]
    # Characters of ``history[:counted]``, kept as the history grows (it only appends).
    counted: int = 0
    chars: int = 0

    def history_chars(self) -> int:
        if self.counted > len(self.history):  # replaced, not appended: count afresh
            self.counted, self.chars = 0, 0
        self.chars += compaction.message_chars(self.history[self.counted :])
        self.counted = len(self.history)
        return self.chars


class SessionKeeper:
    """See the module docstring. Only the session's own lane touches its state."""

    def __init__(
        self,
        db: SessionDB,
        runner: TurnRunner,
        prompts: PromptBuilder,
        clock: Clock,
        providers: MemoryProviders,
        *,
        caller_context_for: CallerContextFor,
        memory_blocks_for: MemoryBlocksFor,
        cache_size: int,
        compaction_settings: CompactionSettings | None,
    ) -> None:
        self._db = db
        self._runner = runner
        self._prompts = prompts
        self._clock = clock
        self._providers = providers
        self._caller_context_for = caller_context_for
        self._memory_blocks_for = memory_blocks_for
        self._cache_size = cache_size
        self._compaction = compaction_settings
        self._sessions: OrderedDict[str, SessionState] = OrderedDict()

    def cached(self, key: str) -> SessionState | None:
        return self._sessions.get(key)

    def forget(self, key: str) -> None:
        self._sessions.pop(key, None)

    async def current(self, item: InboxItem) -> SessionState:
        """The chat's active session and its transcript, opening a session if none is."""
        key = item.session_key
        state = self._sessions.get(key)
        if state is not None:
            self._sessions.move_to_end(key)
            return state
        row = await self._db.active_session(key) or await self._open(item)
        await self._providers.initialize(row.id, platform=row.platform, user_id=row.user_id or "")
        # A session opened just now has no transcript to read back.
        stored = await self._db.history(row.id) if row.message_count else []
        state = self._sessions[key] = SessionState(row, [to_chat(m) for m in stored])
        while len(self._sessions) > self._cache_size:
            self._sessions.popitem(last=False)
        return state

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

        ``tool_names`` and ``caller`` override the turn runner's tools and the chat's
        caller context (a scheduled run has no ``cronjob`` tool and its own guidance).
        """
        now = self._clock.now()
        stamp = datetime.fromtimestamp(now, tz=UTC).strftime("%Y%m%d_%H%M%S")
        session_id = f"{stamp}_{secrets.token_hex(4)}"
        model = self._runner.model
        parts = self._prompts.build(
            PromptContext(
                session_id=session_id,
                platform=msg.platform,
                provider=model.provider,
                model=model.model,
                started_at=now,
                tool_names=list(tool_names or self._runner.tools.names()),
                caller=caller or self._caller_context_for(msg),
                memory_blocks=[
                    *await asyncio.to_thread(self._memory_blocks_for, msg),
                    *self._providers.system_prompt_blocks(),
                ],
            )
        )
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
            parent_session_id=parent_id,
            message_count=message_count,
        )

    def compaction_due(self, state: SessionState, item: InboxItem) -> bool:
        settings = self._compaction
        if settings is None:
            return False
        upcoming = compaction.message_chars([ChatMessage(role="user", content=item.message.text)])
        chars = len(state.row.system_prompt) + state.history_chars() + upcoming
        return compaction.exceeds(settings, chars)

    async def compact(
        self, state: SessionState, item: InboxItem, *, keep: int | None = None
    ) -> SessionState | None:
        """Summarise the older turns into a child session; None when it cannot be done."""
        if keep is None:
            keep = (self._compaction or CompactionSettings()).keep_recent_messages
        cut = compaction.plan(await self._db.history(state.row.id), keep)
        if cut is None:
            return None
        try:
            summary = await compaction.summarise(self._runner.model, cut.older)
        except ModelError as exc:
            log.warning("compaction of %s skipped: %s", state.row.id, exc.__class__.__name__)
            return None
        now = self._clock.now()
        opening = compaction.child_messages(summary, cut.recent, now)
        child = await self.new_row(
            item.message, item.session_key, parent_id=state.row.id, message_count=len(opening)
        )
        row = await self._db.compact(state.row.id, now, child, opening)
        await self._providers.on_session_end(state.row.id)
        await self._providers.initialize(row.id, platform=row.platform, user_id=row.user_id or "")
        compacted = SessionState(row, [to_chat(m) for m in compaction.as_stored(opening)])
        self._sessions[item.session_key] = compacted
        log.info("session %s compacted into %s", state.row.id, row.id)
        return compacted
