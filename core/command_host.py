"""What chat command handlers may ask of the core (``core.commands.CommandHost``)."""

from __future__ import annotations

from core import compaction, status
from core.access import AccessPolicy
from core.approvals.service import Approvals
from core.commands import CommandRegistry
from core.hooks import TurnHooks
from core.messages import ChatTarget, InboundMessage
from core.models.base import ModelClient
from core.sessions import SessionKeeper
from core.store.db import SessionDB
from core.store.records import InboxItem

# /compact by hand summarises everything but the last exchange.
MANUAL_KEEP = 2
NO_SESSION = "Nothing to compact: this chat has no session yet."


class CoreCommandHost:
    """``/status``, ``/compact``, ``/help`` and who owns the bot, over the core's sessions,
    registries and access policy."""

    def __init__(
        self,
        db: SessionDB,
        sessions: SessionKeeper,
        commands: CommandRegistry,
        hooks: TurnHooks,
        model: ModelClient,
        access: AccessPolicy,
        approvals: Approvals | None = None,
    ) -> None:
        self._db = db
        self._approvals = approvals
        self._access = access
        self._sessions = sessions
        self._commands = commands
        self._hooks = hooks
        self._model = model

    def is_owner(self, message: InboundMessage) -> bool:
        return self._access.is_owner(message.platform, message.user_id)

    async def describe_status(self, item: InboxItem) -> str:
        state = self._sessions.cached(item.session_key)
        row = state.row if state else await self._db.active_session(item.session_key)
        extras = await self._hooks.status(row) if row else []
        changed = self._sessions.tool_change_line(row) if row else None
        tools = [changed] if changed else []
        waiting = await self._waiting(item)
        return status.render(
            [status.session_lines(row), tools, *extras, waiting, status.model_lines(self._model)]
        )

    async def _waiting(self, item: InboxItem) -> list[str]:
        """A line naming the chat's approvals still waiting for a decision, if any."""
        if self._approvals is None:
            return []
        pending = await self._approvals.pending_in_chat(ChatTarget.of(item.message))
        if not pending:
            return []
        listed = ", ".join(f"#{a.id} {a.tool_name}" for a in pending[:5])
        more = f" and {len(pending) - 5} more" if len(pending) > 5 else ""
        return [f"Waiting for approval: {listed}{more} (/approve or /deny)"]

    async def compact_session(self, item: InboxItem) -> str:
        if not await self._has_session(item):
            return NO_SESSION  # /compact opens no session to find nothing in it
        state = await self._sessions.current(item)
        compacted = await self._sessions.compact(state, item, keep=MANUAL_KEEP)
        if compacted is None:
            return "Nothing to compact yet (or the model could not write the summary)."
        return compaction.NOTICE

    async def _has_session(self, item: InboxItem) -> bool:
        if self._sessions.cached(item.session_key) is not None:
            return True
        return await self._db.active_session(item.session_key) is not None

    def command_help(self) -> str:
        return self._commands.help_text()
