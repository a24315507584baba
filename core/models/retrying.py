"""``RetryingModel``: one retry policy wrapped around any provider.

Providers raise ``TransientModelError`` for failures worth another try (429, 5xx,
connection errors, timeouts); this wrapper retries those through
``core.retry.retry_async`` and lets everything else through at once. ``call_timeout``
bounds the whole call, every try and pause included: a provider that hangs costs the
person that long, not ``(retries + 1) * timeout`` plus the pauses.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from core.errors import ModelTimeout, TransientModelError
from core.models.base import ModelClient, ModelReply, ModelRequest, ModelWrapper, TextSink
from core.retry import RetryPolicy, retry_async

_log = logging.getLogger(__name__)


class RetryingModel(ModelWrapper):
    """A ``ModelClient`` that retries its inner client's transient errors.

    A streamed call that already passed text to ``request.on_text`` is not retried:
    a second attempt would send the caller the same words twice. The original
    error is raised instead.
    """

    def __init__(
        self, inner: ModelClient, policy: RetryPolicy, *, call_timeout: float | None = None
    ) -> None:
        super().__init__(inner)
        self._policy = policy
        self._call_timeout = call_timeout

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Answer ``request``, retrying transient failures as the policy allows; raise
        ``ModelTimeout`` once ``call_timeout`` has passed, whatever try is under way."""
        sink = _TrackingSink(request.on_text)
        tracked = request if request.on_text is None else dataclasses.replace(request, on_text=sink)
        deadline = asyncio.timeout(self._call_timeout)
        try:
            async with deadline:
                return await retry_async(
                    lambda: self._inner.complete(tracked),
                    policy=self._policy,
                    retry_on=(TransientModelError,),
                    should_retry=lambda _error: not sink.emitted,
                    on_retry=self._log_retry,
                )
        except TimeoutError:
            if not deadline.expired():
                raise
            raise ModelTimeout(
                f"{self.provider}: no answer within {self._call_timeout:g} s, retries included",
                provider=self.provider,
            ) from None

    def _log_retry(self, attempt: int, error: BaseException, delay: float) -> None:
        _log.warning(
            "model call failed, retrying: provider=%s attempt=%s delay=%.2fs error=%s",
            self._inner.provider,
            attempt,
            delay,
            type(error).__name__,
        )


class _TrackingSink:
    """Forwards text deltas and remembers whether any were sent."""

    def __init__(self, sink: TextSink | None) -> None:
        self._sink = sink
        self.emitted = False

    async def __call__(self, text: str) -> None:
        if self._sink is not None:
            self.emitted = True
            await self._sink(text)
