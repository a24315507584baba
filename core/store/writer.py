"""Group commit: many callers' writes share one transaction, each still durable.

A caller hands ``run`` an operation (a coroutine function of one connection) and
gets its result once the transaction that ran it has committed. Operations queued
while a transaction is in flight are committed together in the next one, so a busy
gateway pays one commit for many turns while an idle one pays no extra latency.

Operations must only touch the database: when one raises, the batch is rolled back
and every operation of it is re-run alone, so the failure reaches only its caller.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from core.errors import StoreError

T = TypeVar("T")
WriteOp = Callable[[AsyncConnection], Awaitable[T]]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Pending(Generic[T]):
    op: WriteOp[T]
    future: asyncio.Future[T]


class GroupWriter:
    """The single writer of a SessionDB; see the module docstring."""

    def __init__(self, engine: AsyncEngine, *, max_batch: int = 256) -> None:
        self._engine = engine
        self._max_batch = max_batch
        self._queue: asyncio.Queue[_Pending[Any]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.commits = 0

    async def __aenter__(self) -> GroupWriter:
        self._task = asyncio.create_task(self._loop(), name="sessiondb-writer")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._queue.join()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def run(self, op: WriteOp[T]) -> T:
        """Run ``op`` in a write transaction and return its result after commit."""
        if self._task is None or self._task.done():
            raise StoreError("the SessionDB writer is not running")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Pending(op, future))
        # shield: a cancelled caller must not cancel a commit other callers share.
        return await asyncio.shield(future)

    async def _loop(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < self._max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self._commit(batch)
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def _commit(self, batch: list[_Pending[Any]]) -> None:
        try:
            async with self._engine.begin() as conn:
                results = [await item.op(conn) for item in batch]
        except Exception as exc:  # noqa: BLE001 - any failure must reach its caller
            if len(batch) > 1:
                for item in batch:
                    await self._commit([item])
                return
            log.debug("write failed: %r", exc)
            _settle_error(batch[0], exc)
            return
        self.commits += 1
        for item, result in zip(batch, results, strict=True):
            if not item.future.done():
                item.future.set_result(result)


def _settle_error(item: _Pending[Any], exc: Exception) -> None:
    if item.future.done():
        return
    if isinstance(exc, StoreError):
        item.future.set_exception(exc)
        return
    error = StoreError(f"SessionDB write failed: {exc.__class__.__name__}: {exc}")
    error.__cause__ = exc
    item.future.set_exception(error)
