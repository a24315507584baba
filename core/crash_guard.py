"""The crash-loop guard: one poisonous message must not crash the gateway forever.

Before a lane runs an inbox item, the start is committed (``SessionDB.take``: the
row's ``attempts`` goes up by one). A process that dies mid-turn leaves the row
pending with the count, and the next start recovers it (``Ingress.recover``), first in
its chat's lane. An item whose turn was in flight during ``max_crashes`` consecutive
crashes is not run again: it is marked failed, its chat hears why, and the chat's
session ends (``end_reason='crash_loop'``), so the chat's next message starts a fresh
one (a session whose history is what kills the process is set aside with it). A turn
that finishes, any way, finishes its row, so the chat's next message starts from 0.
A turn a graceful stop cuts short (past ``shutdown_grace``) is not a crash: the stop
gives its start back (``release_cut``) before the process exits.
"""

from __future__ import annotations

import asyncio
import logging

from core.clock import Clock
from core.hooks import TurnHooks
from core.outbox import Outbox
from core.router import Handler
from core.sessions import SessionKeeper
from core.store.db import SessionDB
from core.store.records import InboxItem, TurnOutcome, TurnReplies
from core.turns import Work

log = logging.getLogger(__name__)

MAX_CRASHES = 3
SET_ASIDE = (
    "I could not answer your message: the gateway stopped {count} times while working on "
    "it, so I have set it aside. Your next message starts a fresh session."
)


class CrashGuard:
    """Wraps the router's handler; see the module docstring."""

    def __init__(
        self,
        handle: Handler[Work],
        db: SessionDB,
        sessions: SessionKeeper,
        hooks: TurnHooks,
        outbox: Outbox,
        clock: Clock,
        *,
        max_crashes: int = MAX_CRASHES,
    ) -> None:
        self._handle = handle
        self._db = db
        self._sessions = sessions
        self._hooks = hooks
        self._outbox = outbox
        self._clock = clock
        self._max = max_crashes
        self._cut: set[int] = set()  # cancelled mid-turn; pending unless /stop finished it

    async def handle(self, work: Work) -> TurnReplies:
        """Run ``work`` unless it crashed the gateway ``max_crashes`` times already."""
        if work.item.attempts >= self._max:
            return await self._set_aside(work.item)
        await self._db.take(work.id)
        try:
            return await self._handle(work)
        except asyncio.CancelledError:
            self._cut.add(work.id)
            raise

    async def release_cut(self) -> None:
        """The gateway is stopping: give back the starts of the turns it cancelled (a
        ``/stop`` already finished its own, so only rows still pending change)."""
        cut, self._cut = sorted(self._cut), set()
        if cut:
            await self._db.release(cut)

    async def _set_aside(self, item: InboxItem) -> TurnReplies:
        log.warning(
            "inbox %s was in flight during %d crashes: marked failed, its session ended",
            item.id,
            item.attempts,
        )
        row = await self._db.active_session(item.session_key)
        outcome = TurnOutcome(
            item=item,
            status="failed",
            processed_at=self._clock.now(),
            session_id=row.id if row is not None else None,
            replies=[SET_ASIDE.format(count=item.attempts)],
            error=f"in flight during {item.attempts} crashes",
            end_session_reason="crash_loop" if row is not None else None,
        )
        replies = await self._db.finish_turn(outcome)
        await self._outbox.publish(replies)
        self._sessions.forget(item.session_key)
        if row is not None:
            await self._hooks.ended(row.id)
        return TurnReplies(outcome.session_id, replies)
