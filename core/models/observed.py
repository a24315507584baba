"""``ObservedModel``: times and counts every call of the model it wraps.

Each call's latency goes to ``CoreStats.model_seconds`` by provider and model, each
failure to ``CoreStats.model_errors`` by provider and kind, and one DEBUG line (which the
turn id ties to its turn) says how long it took. Nothing of the request or the reply's
text is logged.
"""

from __future__ import annotations

import logging
import time

from core.errors import ModelError, ModelRequestError, ModelTimeout, RateLimited
from core.models.base import ModelClient, ModelReply, ModelRequest, ModelWrapper
from core.stats import CoreStats
from core.telemetry import NO_TELEMETRY, ModelCall, Telemetry

log = logging.getLogger(__name__)


def error_kind(exc: ModelError) -> str:
    """A small, fixed vocabulary for the ``kind`` label."""
    if isinstance(exc, ModelTimeout):
        return "timeout"
    if isinstance(exc, RateLimited):
        return "rate_limited"
    if isinstance(exc, ModelRequestError):
        return "refused"
    return "unavailable"


class ObservedModel(ModelWrapper):
    """A ``ModelClient`` that reports each call of ``inner`` to ``stats``."""

    def __init__(
        self, inner: ModelClient, stats: CoreStats, telemetry: Telemetry = NO_TELEMETRY
    ) -> None:
        super().__init__(inner)
        self._stats = stats
        self._telemetry = telemetry

    async def complete(self, request: ModelRequest) -> ModelReply:
        started = time.perf_counter()
        try:
            reply = await self._inner.complete(request)
        except ModelError as exc:
            kind = error_kind(exc)
            seconds = self._observe(started)
            self._telemetry.model_call(ModelCall(self.provider, self.model, seconds, error=kind))
            self._stats.model_errors[self.provider, kind] += 1
            log.debug("model call failed: provider=%s kind=%s", self.provider, kind)
            raise
        seconds = self._observe(started)
        self._telemetry.model_call(
            ModelCall(
                self.provider,
                self.model,
                seconds,
                reply.input_tokens,
                reply.output_tokens,
                cache_read_tokens=reply.cache_read_tokens,
                cache_write_tokens=reply.cache_write_tokens,
            )
        )
        log.debug(
            "model call: provider=%s model=%s seconds=%.3f tokens_in=%d tokens_out=%d",
            self.provider,
            self.model,
            seconds,
            reply.input_tokens,
            reply.output_tokens,
        )
        return reply

    def _observe(self, started: float) -> float:
        seconds = time.perf_counter() - started
        self._stats.model_seconds.observe((self.provider, self.model), seconds)
        return seconds
