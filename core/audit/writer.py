"""The audit writer: events queued in memory, written in batches by one background task.

``record`` is a ``put_nowait`` on a bounded queue, so a turn never waits for the ledger;
when the queue is full the event is dropped and counted (``dropped``). The writer task
waits ``linger_seconds`` after an event for the ones that follow it, then takes what
has queued up (up to ``batch`` events) and appends it in one write through
``core/store/audit.py``; a failed write is logged and its events counted (``failed``),
never raised into anything. Closing writes what is still queued. A person being
forgotten in this process (``forgetting``) is left out of every event written from then
on, queued ones included, so none lands under their id after the forgetting.

Each event belongs to a turn when one is being worked on (``core.turn_context``): the
writer remembers, for recent turns, whom they concern (``remember``), so a model call or a
tool call deep in a turn is filed under its session, chat and person without passing
them down.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from dataclasses import replace
from types import TracebackType

from core import turn_context
from core.audit.events import Detail, Who
from core.clock import Clock
from core.mailbox import Mailbox
from core.store.audit import AuditRecord, AuditStore
from core.tasks import TaskSet

log = logging.getLogger(__name__)

_TURNS_KEPT = 4096
_NOBODY = Who()


class AuditWriter:
    """An ``AuditSink`` over the SessionDB's ``audit`` table (see the module docstring)."""

    def __init__(
        self,
        store: AuditStore,
        clock: Clock,
        *,
        max_queue: int = 10_000,
        batch: int = 500,
        linger_seconds: float = 0.1,
    ) -> None:
        self._store = store
        self._clock = clock
        self._batch = batch
        self._linger = linger_seconds
        # None is the writer's stop sign, queued by ``__aexit__`` behind every event.
        self._queue: Mailbox[AuditRecord | None] = Mailbox(max_queue)
        self._closing = False
        self._turns: OrderedDict[int, Who] = OrderedDict()
        self._forgotten: set[str] = set()
        self._tasks = TaskSet("audit")
        self.written = 0
        self.dropped = 0
        self.failed = 0

    async def __aenter__(self) -> AuditWriter:
        self._tasks.spawn(self._run(), name="writer")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing = True  # what is queued is written now, without lingering
        self._queue.put(None, always=True)
        await self._tasks.wait()

    def record(
        self,
        event: str,
        detail: Detail | None = None,
        *,
        who: Who | None = None,
        turn_id: int | None = None,
        message_id: str | None = None,
    ) -> None:
        if turn_id is None and who is None:
            current = turn_context.current()
            turn_id = int(current) if current is not None else None
        known = self._turns.get(turn_id) if turn_id is not None else None
        who = known or who or _NOBODY
        # Positional: about six a turn on the event loop, where keywords cost twice as much.
        record = AuditRecord(
            self._clock.now(),
            event,
            turn_id,
            who.session_id,
            who.chat_key,
            who.person,
            who.platform,
            message_id,
            dict(detail) if detail else {},
        )
        if not self._queue.put(record):
            self.dropped += 1

    def remember(self, turn_id: int, who: Who) -> None:
        self._turns[turn_id] = who
        self._turns.move_to_end(turn_id)
        while len(self._turns) > _TURNS_KEPT:
            self._turns.popitem(last=False)

    def forgetting(self, person: str) -> None:
        self._forgotten.add(person)

    def _scrubbed(self, record: AuditRecord) -> AuditRecord:
        if record.person not in self._forgotten:
            return record
        return replace(record, person=None, chat_key=None)

    async def _run(self) -> None:
        stopping = False
        while not stopping:
            await self._queue.wait()
            if not self._closing:
                # A turn records about ten events one after another: wait for the rest so
                # they share one write, rather than a commit each on the writer's thread.
                await asyncio.sleep(self._linger)
            taken = self._queue.take_now(self._batch)
            self._queue.done(len(taken))
            batch = [record for record in taken if record is not None]
            stopping = len(batch) < len(taken)
            await self._write(batch)

    async def _write(self, records: list[AuditRecord]) -> None:
        if not records:
            return
        try:
            await self._store.append([self._scrubbed(r) for r in records])
        except Exception as exc:  # the ledger is best effort: a failure never reaches a turn
            self.failed += len(records)
            log.warning("audit: %d event(s) not written: %s", len(records), type(exc).__name__)
        else:
            self.written += len(records)
