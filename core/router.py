"""SessionRouter: exactly one turn at a time per session key, in arrival order.

Each key gets a lane: a FIFO of work items (an inbox item and what it asks for) and
one worker task that drains it.
Lanes of different keys run concurrently; a lane's worker exits when its queue has
been empty for ``idle_seconds``, and ``on_idle`` hears the key (the session keeper
lets the chat's transcript go then). ``cancel`` stops the item a lane is running (for
``/stop``) without touching what is queued behind it. ``drain`` (the gateway is
stopping) lets each lane finish the item it is running, for a grace period, and start
nothing more. ``pace`` (the per-chat rate limit, ``core.rate_limit``) may hold a lane's
next item before it starts; the item stays queued meanwhile, so ``/stop`` does not
touch it and a stop leaves it pending for the next start.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from core.store.records import TurnReplies
from core.tasks import TaskSet

log = logging.getLogger(__name__)


class Routed(Protocol):
    """What the router needs of a work item: its inbox id, its lane and its session."""

    @property
    def id(self) -> int: ...

    @property
    def session_key(self) -> str: ...

    @property
    def session_id(self) -> str | None: ...


W = TypeVar("W", bound=Routed)
Handler = Callable[[W], Coroutine[Any, Any, TurnReplies]]
Pace = Callable[[int], Awaitable[None]]  # waits until the inbox id may start


async def _unpaced(inbox_id: int) -> None:
    return None


@dataclass(slots=True)
class _Lane(Generic[W]):
    queue: deque[W] = field(default_factory=deque)
    wakeup: asyncio.Future[None] | None = None  # pending while the worker waits for work
    current: asyncio.Task[TurnReplies] | None = None
    worker: asyncio.Task[None] | None = None
    stop_requested: bool = False
    pacing: bool = False  # the worker waits for ``pace`` to let the next item start
    idle_waiters: list[asyncio.Future[None]] = field(default_factory=list)

    def notify_idle(self) -> None:
        waiters, self.idle_waiters = self.idle_waiters, []
        for waiter in waiters:
            _wake(waiter)


class SessionRouter(Generic[W]):
    """Per-key ordering with concurrency across keys; see the module docstring."""

    def __init__(
        self,
        handle: Handler[W],
        on_cancelled: Handler[W],
        *,
        idle_seconds: float = 300.0,
        pace: Pace = _unpaced,
        on_idle: Callable[[str], None] = lambda _key: None,
    ) -> None:
        self._handle = handle
        self._on_idle = on_idle
        self._on_cancelled = on_cancelled
        self._pace = pace
        self._idle = idle_seconds
        self._lanes: dict[str, _Lane[W]] = {}
        self._waiters: dict[int, asyncio.Future[TurnReplies]] = {}
        self._tasks = TaskSet("lane")
        self._draining = False

    def submit(self, item: W) -> None:
        """Queue ``item`` behind earlier items of its session key."""
        self.watch(item.id)
        lane = self._lanes.get(item.session_key)
        if lane is None:
            lane = self._lanes[item.session_key] = _Lane()
            lane.worker = self._tasks.spawn(
                self._drain(item.session_key, lane), name=item.session_key
            )
        lane.queue.append(item)
        _wake(lane.wakeup)

    def watch(self, inbox_id: int) -> asyncio.Future[TurnReplies]:
        """A future resolved with the replies once ``inbox_id`` has been processed."""
        future = self._waiters.get(inbox_id)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            self._waiters[inbox_id] = future
        return future

    def in_flight(self, inbox_id: int) -> bool:
        return inbox_id in self._waiters

    def cancel(self, key: str) -> bool:
        """Cancel the item running for ``key``; True if there was one."""
        lane = self._lanes.get(key)
        if lane is None or lane.current is None or lane.current.done():
            return False
        lane.stop_requested = True
        lane.current.cancel()
        return True

    def busy(self, key: str) -> bool:
        """True while ``key`` has an item running or queued."""
        lane = self._lanes.get(key)
        return lane is not None and (lane.current is not None or bool(lane.queue))

    async def until_idle(self, key: str) -> None:
        """Return once ``key`` has nothing running or queued (background work yields so)."""
        while self.busy(key):
            waiter = asyncio.get_running_loop().create_future()
            self._lanes[key].idle_waiters.append(waiter)
            await waiter

    @property
    def active_lanes(self) -> int:
        return len(self._lanes)

    @property
    def running(self) -> int:
        """Items being processed right now (one at most per lane)."""
        return sum(lane.current is not None for lane in self._lanes.values())

    @property
    def queued(self) -> int:
        return sum(len(lane.queue) for lane in self._lanes.values())

    async def drain(self, grace: float) -> int:
        """Start no new item; give each lane ``grace`` seconds to finish the one it is
        running, then cancel the rest. What is cancelled or was still queued stays pending
        in the inbox for the next start, and whoever waits for it is told so
        (``TurnReplies.pending``). Returns how many running items were cancelled."""
        self._draining = True
        workers = []
        for lane in self._lanes.values():
            _wake(lane.wakeup)  # an idle worker stops now instead of after ``idle_seconds``
            if lane.worker is not None:
                if lane.pacing:  # its next item has not started: it stays pending
                    lane.worker.cancel()
                workers.append(lane.worker)
        try:
            if workers:
                await asyncio.wait(workers, timeout=grace)
        finally:  # also when a second stop signal cuts the grace short
            cut = self.running
            await self._tasks.close()
            for inbox_id in list(self._waiters):
                self.resolve(inbox_id, TurnReplies(None, [], pending=True))
        return cut

    async def close(self) -> None:
        """Stop every lane; unfinished items stay pending in the inbox for next start."""
        await self._tasks.close()
        for future in self._waiters.values():
            future.cancel()
        self._waiters.clear()

    async def _drain(self, key: str, lane: _Lane[W]) -> None:
        try:
            while not self._draining:
                if not lane.queue:
                    await self._wait_for_work(lane)
                    if not lane.queue:
                        if not self._draining:
                            self._on_idle(key)
                        return  # idle for ``idle_seconds``
                    continue
                await self._paced(lane, lane.queue[0].id)
                await self._process(lane, lane.queue.popleft())
                if not lane.queue:
                    lane.notify_idle()
        finally:
            if self._lanes.get(key) is lane:
                del self._lanes[key]
            lane.notify_idle()

    async def _wait_for_work(self, lane: _Lane[W]) -> None:
        # A future and a timer, once per item on a lane that keeps up: ``wait_for``
        # made a task per wait, and ``asyncio.timeout`` measured slower still on uvloop.
        loop = asyncio.get_running_loop()
        lane.wakeup = loop.create_future()
        timer = loop.call_later(self._idle, _wake, lane.wakeup)
        try:
            await lane.wakeup
        finally:
            timer.cancel()
            lane.wakeup = None

    async def _paced(self, lane: _Lane[W], inbox_id: int) -> None:
        lane.pacing = True
        try:
            await self._pace(inbox_id)
        finally:
            lane.pacing = False

    async def _process(self, lane: _Lane[W], item: W) -> None:
        lane.stop_requested = False
        lane.current = asyncio.get_running_loop().create_task(self._handle(item))
        try:
            replies = await lane.current
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if (task is not None and task.cancelling()) or not lane.stop_requested:
                raise
            replies = await self._on_cancelled(item)
        except Exception:  # the handler records its own failures; reaching here is a bug
            # (or the SessionDB refused the outcome): the item stays pending in the inbox
            # and runs again at the next start, so waiters hear "not done", not "no reply".
            log.exception("turn for inbox %s crashed", item.id)
            replies = TurnReplies(item.session_id, [], pending=True)
        finally:
            lane.current = None
        self.resolve(item.id, replies)

    def resolve(self, inbox_id: int, replies: TurnReplies) -> None:
        """Hand ``replies`` to whoever watches ``inbox_id``."""
        future = self._waiters.pop(inbox_id, None)
        if future is not None and not future.done():
            future.set_result(replies)


def _wake(waiting: asyncio.Future[None] | None) -> None:
    if waiting is not None and not waiting.done():
        waiting.set_result(None)
