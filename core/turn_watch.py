"""A turn's time, watched: one notice when it is slow to answer, one bound on how long
it may run.

A person who writes and hears nothing for half a minute cannot tell a slow model from
a dead gateway. ``TurnWatch.run`` awaits a turn's model and tool work; once it has
taken ``slow_notice_seconds``, it tells the chat once, through the outbox like any
notice, that the answer is coming; past ``turn_timeout_seconds`` it gives up with
``TurnTimedOut``, which the turn answers with one line. The notice is committed before
the turn's outcome, so the chat reads them in that order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any, TypeVar

from core.errors import StoreError, TurnTimedOut
from core.messages import ChatTarget
from core.outbox import Outbox
from core.tasks import TaskSet

T = TypeVar("T")
log = logging.getLogger(__name__)

SLOW_NOTICE = (
    "Still working on it: the model is taking longer than usual. "
    "I'll answer here as soon as it replies."
)


class TurnWatch:
    """See the module docstring. ``close`` cancels notices still being written."""

    def __init__(
        self, outbox: Outbox, *, slow_notice_seconds: float, turn_timeout_seconds: float
    ) -> None:
        self._outbox = outbox
        self._notice_after = slow_notice_seconds
        self._limit = turn_timeout_seconds
        self._tasks = TaskSet("slow-notice")

    async def run(self, work: Awaitable[T], target: ChatTarget, session_id: str) -> T:
        """Await ``work`` for the turn of ``session_id`` in ``target``'s chat; see the
        module docstring. Raise ``TurnTimedOut`` once the bound has passed."""
        notices: list[asyncio.Task[Any]] = []
        # One timer per turn: most turns answer before the notice is due, so the
        # deadline is only armed when the notice fires (bench: two timers per turn
        # cost ~13 us of event-loop time, one ~3 us).
        noticing = 0 < self._notice_after < self._limit
        deadline = asyncio.timeout(None if noticing else self._limit)
        timer = None
        try:
            async with deadline:
                if noticing:
                    timer = asyncio.get_running_loop().call_later(
                        self._notice_after, self._slow, deadline, target, session_id, notices
                    )
                result = await work
        except TimeoutError:
            if not deadline.expired():
                raise
            await _settled(notices)
            raise TurnTimedOut(self._limit) from None
        finally:
            if timer is not None:
                timer.cancel()
        await _settled(notices)
        return result

    async def close(self) -> None:
        await self._tasks.close()

    def _slow(
        self,
        deadline: asyncio.Timeout,
        target: ChatTarget,
        session_id: str,
        notices: list[asyncio.Task[Any]],
    ) -> None:
        notices.append(self._tasks.spawn(self._notify(target, session_id), name=session_id))
        now = asyncio.get_running_loop().time()
        deadline.reschedule(now + self._limit - self._notice_after)

    async def _notify(self, target: ChatTarget, session_id: str) -> None:
        try:
            await self._outbox.notify(target, [SLOW_NOTICE], session_id=session_id)
        except StoreError as exc:  # a courtesy: the turn goes on without it
            log.warning(
                "slow-turn notice for session %s not sent: %s", session_id, type(exc).__name__
            )


async def _settled(notices: list[asyncio.Task[Any]]) -> None:
    """Let a notice under way be committed before the turn's outcome is."""
    if notices and not notices[0].done():
        await asyncio.wait(notices)
