"""A turn's time, watched: one notice when it is slow to answer, one bound on how long
it may run.

A person who writes and hears nothing for half a minute cannot tell a slow model from
a dead gateway. ``TurnWatch.run`` awaits a turn's model and tool work; once it has
taken ``slow_notice_seconds``, it tells the chat once, through the outbox like any
notice, that the answer is coming; past ``turn_timeout_seconds`` it gives up with
``TurnTimedOut``, which the turn answers with one line. The notice is committed before
the turn's outcome, so the chat reads them in that order. While the turn waits for a
person to approve a tool call (``paused``), neither clock runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
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
        # One timer per turn: most turns answer before the notice is due, so the
        # deadline is only armed when the notice fires (bench: two timers per turn
        # cost ~13 us of event-loop time, one ~3 us).
        noticing = 0 < self._notice_after < self._limit
        deadline = asyncio.timeout(None if noticing else self._limit)
        bounds = _Bounds(self, deadline, target, session_id)
        token = _WATCHED.set(bounds)
        try:
            async with deadline:
                if noticing:
                    bounds.arm_notice(self._notice_after)
                result = await work
        except TimeoutError:
            if not deadline.expired():
                raise
            await _settled(bounds.notices)
            raise TurnTimedOut(self._limit) from None
        finally:
            bounds.disarm()
            _WATCHED.reset(token)
        await _settled(bounds.notices)
        return result

    async def close(self) -> None:
        await self._tasks.close()

    def _slow(self, bounds: _Bounds) -> None:
        bounds.notices.append(
            self._tasks.spawn(
                self._notify(bounds.target, bounds.session_id), name=bounds.session_id
            )
        )
        now = asyncio.get_running_loop().time()
        bounds.deadline.reschedule(now + self._limit - self._notice_after)

    async def _notify(self, target: ChatTarget, session_id: str) -> None:
        try:
            await self._outbox.notify(target, [SLOW_NOTICE], session_id=session_id)
        except StoreError as exc:  # a courtesy: the turn goes on without it
            log.warning(
                "slow-turn notice for session %s not sent: %s", session_id, type(exc).__name__
            )


class _Bounds:
    """One running turn's notice timer and deadline, which a wait for a person stops."""

    def __init__(
        self, watch: TurnWatch, deadline: asyncio.Timeout, target: ChatTarget, session_id: str
    ) -> None:
        self.watch = watch
        self.deadline = deadline
        self.target = target
        self.session_id = session_id
        self.notices: list[asyncio.Task[Any]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._notice_left: float | None = None
        self._deadline_left: float | None = None

    def arm_notice(self, delay: float) -> None:
        self._timer = asyncio.get_running_loop().call_later(delay, self._fire)

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        self.watch._slow(self)

    def pause(self) -> None:
        now = asyncio.get_running_loop().time()
        if self._timer is not None:
            self._notice_left = max(self._timer.when() - now, 0.0)
            self.disarm()
        when = self.deadline.when()
        if when is not None:
            self._deadline_left = max(when - now, 0.0)
            self.deadline.reschedule(None)

    def resume(self) -> None:
        now = asyncio.get_running_loop().time()
        if self._notice_left is not None:
            self.arm_notice(self._notice_left)
            self._notice_left = None
        if self._deadline_left is not None:
            self.deadline.reschedule(now + self._deadline_left)
            self._deadline_left = None


_WATCHED: ContextVar[_Bounds | None] = ContextVar("turn_watch", default=None)


@contextmanager
def paused() -> Iterator[None]:
    """Stop the running turn's clock (its slow notice and its deadline) while it waits
    for a person (an approval): that wait is no model or tool being slow."""
    bounds = _WATCHED.get()
    if bounds is None:
        yield
        return
    bounds.pause()
    try:
        yield
    finally:
        bounds.resume()


async def _settled(notices: list[asyncio.Task[Any]]) -> None:
    """Let a notice under way be committed before the turn's outcome is."""
    if notices and not notices[0].done():
        await asyncio.wait(notices)
