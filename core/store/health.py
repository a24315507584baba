"""Store health: whether the SessionDB can write, and finding out when it can again.

The group writer reports each batch: ``failed`` with the ``StoreUnavailable`` a batch
met (disk full, locked, read-only, unreachable), ``succeeded`` after a commit. While a
problem is known, ``problem`` names it (``/readyz`` answers 503 with it) and new writes
fail fast instead of each waiting out the busy timeout behind the last; a probe write,
paced by ``core.retry.Backoff`` up to ``probe_max_seconds``, finds out when the store
writes again. The log names the cause once when it starts and once when it clears.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from core.errors import StoreError, StoreUnavailable
from core.retry import Backoff
from core.store.faults import again
from core.store.tx import Tx
from core.tasks import TaskSet

log = logging.getLogger(__name__)

Probe = Callable[[], Awaitable[object]]
FIRST_PROBE_SECONDS = 0.05
# One row, rewritten: a real page write, so a full disk fails it as it fails a turn.
_PROBE = (
    "INSERT INTO store_probe (id, probed_at) VALUES (1, :at) "
    "ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at"
)


def write_probe(tx: Tx) -> None:
    """The probe write (see the module docstring)."""
    tx.execute(_PROBE, {"at": time.time()})


class StoreHealth:
    """See the module docstring. ``probe`` is one small write that bypasses fail-fast."""

    def __init__(self, *, probe_max_seconds: float = 5.0) -> None:
        self._probe_max = probe_max_seconds
        self._probe: Probe | None = None
        self._problem: StoreUnavailable | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._tasks = TaskSet("store-health")

    def probe_with(self, probe: Probe) -> None:
        self._probe = probe

    @property
    def problem(self) -> StoreUnavailable | None:
        """Why the store cannot write, or None while it can."""
        return self._problem

    def unavailable(self) -> StoreUnavailable | None:
        """A fresh error for a write refused while the problem lasts (None: no problem)."""
        problem = self._problem
        return None if problem is None else again(problem)

    def failed(self, problem: StoreUnavailable) -> None:
        known, self._problem = self._problem, problem  # the newest cause, for /readyz
        if known is not None:
            if known.kind != problem.kind:
                log.warning("the SessionDB still cannot write, now: %s", problem)
            return
        self._writable.clear()
        log.warning("the SessionDB cannot write (%s); writes fail fast until it can", problem)
        if self._probe is not None:
            self._tasks.spawn(self._probe_until_clear(self._probe), name="probe")

    def succeeded(self) -> None:
        problem, self._problem = self._problem, None
        if problem is not None:
            self._writable.set()
            log.warning("the SessionDB can write again (it was: %s)", problem.describe())

    async def until_writable(self, at_most: float) -> None:
        """Return once the store writes again, or after ``at_most`` seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(at_most):
                await self._writable.wait()

    async def close(self) -> None:
        await self._tasks.close()

    async def _probe_until_clear(self, probe: Probe) -> None:
        backoff = Backoff(FIRST_PROBE_SECONDS, max(self._probe_max, FIRST_PROBE_SECONDS))
        while self._problem is not None:
            await asyncio.sleep(backoff.next())
            with contextlib.suppress(StoreError):  # still failing: the writer kept the cause
                await probe()
