"""The SQLite writer's queue, drained by the writer's own thread.

The event loop ``put``s a write; the writer's thread takes up to ``max_batch`` queued
writes at a time, commits them in one transaction and hands the outcome to the loop
with one ``call_soon_threadsafe``, then at once takes what was queued meanwhile; with
nothing queued it does the runner's ``idle`` work (search indexing) before it rests. Had
the loop to start each batch (as it does on PostgreSQL, ``core.store.writer``), at full
load the writer would wait for a loop busy settling the last batch's callers, and the
loop for the writer: each sat idle about a third of the time.

A write no one waits on (a usage row, a reply marked delivered) may be put ``later``:
it does not start the thread but rides with the next write, or goes on its own after
``LATER_SECONDS``. A turn in a quiet gateway then costs about three commits, not four.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from core.errors import StoreUnavailable
from core.store.faults import classify
from core.store.tx import Tx

T = TypeVar("T")
WriteOp = Callable[[Tx], T]
LATER_SECONDS = 0.01


class Committer(Protocol):
    """The writer's thread and connection (``core.store.writer.SqliteRunner``)."""

    def start(self, work: Callable[[], None]) -> None: ...

    def idle(self) -> bool: ...

    def behind(self) -> bool: ...

    def commit(self, ops: Sequence[WriteOp[Any]]) -> list[Any]: ...


@dataclass(slots=True)
class Pending(Generic[T]):
    op: WriteOp[T]
    future: asyncio.Future[T]
    probe: bool = False


@dataclass(slots=True)
class Outcome:
    """What became of some queued writes, handed from the writer's thread to the loop:
    ``results`` when they committed; else ``problem`` when the store cannot write
    (``refused``: known before they ran); else ``error``, one write's own failure."""

    items: list[Pending[Any]]
    results: list[Any] | None = None
    problem: StoreUnavailable | None = None
    error: BaseException | None = None
    refused: bool = False


class Drain:
    """See the module docstring. Failures are handled as on the loop-driven path: a
    failed batch is re-run one write at a time, and once the store is known not to
    write, what the thread takes next is refused (probes excepted) until a write
    succeeds again. The thread keeps that knowledge itself: it is newer than
    ``StoreHealth``'s, which learns it from these same outcomes later."""

    def __init__(
        self,
        runner: Committer,
        deliver: Callable[[list[Outcome]], None],
        *,
        max_batch: int,
        path: str | None,
    ) -> None:
        self._runner = runner
        self._loop = asyncio.get_running_loop()
        self._deliver = deliver
        self._max_batch = max_batch
        self._path = path
        self._problem: StoreUnavailable | None = None  # the writer thread's own
        self._items: deque[Pending[Any]] = deque()
        self._lock = threading.Lock()
        self._running = False  # the thread is draining, or about to
        self._idle_due = False  # the runner's ``idle`` has work (the thread's own)
        self._timer: asyncio.TimerHandle | None = None  # starts what was put ``later``

    def put(self, item: Pending[Any], *, later: bool = False) -> None:
        """Queue ``item`` (on the loop); see the module docstring for ``later``."""
        with self._lock:
            self._items.append(item)
            if self._running:
                return
            if later:
                if self._timer is None:
                    self._timer = self._loop.call_later(LATER_SECONDS, self._start)
                return
            self._running = True
        self._runner.start(self._drain)

    def _start(self) -> None:
        self._timer = None
        with self._lock:
            if self._running or not self._items:
                return
            self._running = True
        self._runner.start(self._drain)

    def _drain(self) -> None:
        try:
            after_batch = False
            while True:
                # Idle work far behind goes between two batches rather than after the last.
                first = after_batch and self._idle_due and self._runner.behind()
                with self._lock:
                    items = self._items
                    if not items and not self._idle_due:
                        self._running = False
                        return
                    count = 0 if first else min(len(items), self._max_batch)
                    batch = [items.popleft() for _ in range(count)]
                after_batch = bool(batch)
                if not batch:
                    self._idle_due = self._runner.idle()
                    continue
                outcomes: list[Outcome] = []
                self._problem = self._run(batch, outcomes, self._problem)
                self._loop.call_soon_threadsafe(self._deliver, outcomes)
                self._idle_due = self._problem is None
        except BaseException:  # the loop closed under it: the next ``put`` starts over
            with self._lock:
                self._running = False
            raise

    def _run(
        self, batch: list[Pending[Any]], outcomes: list[Outcome], known: StoreUnavailable | None
    ) -> StoreUnavailable | None:
        """Commit ``batch``, noting what became of it in ``outcomes``; returns the problem
        known afterwards (the store's health is the loop's, updated on delivery)."""
        if known is not None:
            refused = [item for item in batch if not item.probe]
            if refused:
                outcomes.append(Outcome(refused, problem=known, refused=True))
                batch = [item for item in batch if item.probe]
            if not batch:
                return known
        try:
            results = self._runner.commit([item.op for item in batch])
        except BaseException as exc:  # a failure reaches its callers, never the thread
            unavailable = classify(exc, self._path)
            if unavailable is not None:
                outcomes.append(Outcome(batch, problem=unavailable, error=exc))
                return unavailable
            if len(batch) > 1:
                for item in batch:
                    known = self._run([item], outcomes, known)
                return known
            outcomes.append(Outcome(batch, error=exc))
            return known
        outcomes.append(Outcome(batch, results=results))
        return None
