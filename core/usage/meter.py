"""``MeteredModel``: records what every call of the model it wraps used and cost.

Each answered call becomes one ``usage`` row (``core.store.usage``), charged to the
attribution of the code that made it (``core.usage.attribution``), priced from the
operator's ``pricing:`` (``core.usage.pricing``), and counted for ``/metrics`` by
provider, model and kind. The row is handed to the group writer without waiting for its
commit: it joins the batch of the turn's own commit (the writer is first in, first out,
so a turn's rows are durable once its reply is) instead of costing the turn a commit of
its own. A row the store cannot write is logged and lost: a reply never fails for its
bookkeeping (and a turn run again because of it would call the model twice).
"""

from __future__ import annotations

import asyncio
import functools
import logging

from core.clock import Clock
from core.errors import StoreError
from core.models.base import ModelClient, ModelReply, ModelRequest, ModelWrapper
from core.stats import CoreStats
from core.store.usage import UsageRecord, UsageStore
from core.usage.attribution import current
from core.usage.pricing import Pricing, Tokens

log = logging.getLogger(__name__)


class Meter:
    """Prices, stores and counts one call's usage."""

    def __init__(self, store: UsageStore, pricing: Pricing, clock: Clock, stats: CoreStats):
        self._store = store
        self._pricing = pricing
        self._clock = clock
        self._stats = stats
        self._writes: set[asyncio.Future[None]] = set()  # rows queued, not yet committed

    def record(self, provider: str, model: str, reply: ModelReply) -> None:
        tokens = Tokens(
            reply.input_tokens,
            reply.output_tokens,
            reply.cache_read_tokens,
            reply.cache_write_tokens,
        )
        cost = self._pricing.cost_of(provider, model, tokens)
        who = current()
        self._count(provider, model, who.kind, tokens, cost)
        record = UsageRecord(
            at=self._clock.now(),
            kind=who.kind,
            provider=provider,
            model=model,
            input_tokens=tokens.input,
            output_tokens=tokens.output,
            cache_read_tokens=tokens.cache_read,
            cache_write_tokens=tokens.cache_write,
            cost=cost,
            session_id=who.session_id,
            chat_key=who.chat_key,
            person=who.person,
            platform=who.platform,
            route=who.route,
        )
        try:
            stored = self._store.add(record)
        except StoreError as exc:
            _not_stored(record.kind, exc)
            return
        self._writes.add(stored)
        stored.add_done_callback(functools.partial(self._settled, record.kind))

    async def flush(self) -> None:
        """Return once every row recorded so far is stored (or given up)."""
        while self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)

    def _settled(self, kind: str, stored: asyncio.Future[None]) -> None:
        self._writes.discard(stored)
        if stored.cancelled():
            return
        exc = stored.exception()
        if exc is not None:
            _not_stored(kind, exc)

    def _count(
        self, provider: str, model: str, kind: str, tokens: Tokens, cost: float | None
    ) -> None:
        counts = self._stats.usage_tokens
        counts[provider, model, kind, "input"] += tokens.input
        counts[provider, model, kind, "output"] += tokens.output
        counts[provider, model, kind, "cache_read"] += tokens.cache_read
        counts[provider, model, kind, "cache_write"] += tokens.cache_write
        if cost is not None:
            self._stats.usage_cost[provider, model, kind] += cost


def _not_stored(kind: str, exc: BaseException) -> None:
    log.warning("usage of a %s call not stored: %s", kind, exc.__class__.__name__)


class MeteredModel(ModelWrapper):
    """A ``ModelClient`` whose every answered call ``meter`` records."""

    def __init__(self, inner: ModelClient, meter: Meter) -> None:
        super().__init__(inner)
        self._meter = meter

    async def complete(self, request: ModelRequest) -> ModelReply:
        reply = await self._inner.complete(request)
        self._meter.record(self.provider, self.model, reply)
        return reply
