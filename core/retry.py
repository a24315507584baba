"""The one retry helper every model client and adapter uses.

``retry_async`` calls a zero-argument coroutine factory until it succeeds, the error
is not one of ``retry_on``, or the policy's retries run out (then the last error is
re-raised unchanged). Between tries it sleeps with exponential backoff and full
jitter, unless the error carries a ``retry_after`` (``core.errors.RateLimited`` does):
a server that names its pause is obeyed exactly, within a sanity cap.

``Backoff`` paces loops that run until the gateway stops (reconnecting, polling,
resending from the outbox): each ``next()`` pause doubles up to a cap, ``reset()`` after a
success starts again from the first.

``retry_after_from_headers`` reads that pause from HTTP response headers so every
client parses ``Retry-After`` the same way.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC
from typing import TypeVar

from core.record import record

T = TypeVar("T")

Sleep = Callable[[float], Awaitable[object]]
RetryHook = Callable[[int, BaseException, float], None]
Jitter = Callable[[float, float], float]

# A server may ask for a longer pause than our own backoff cap (a 429 with
# Retry-After: 45 is common), but never for an unbounded one.
SERVER_PAUSE_FLOOR_CAP = 60.0
_MAX_DOUBLINGS = 64


@record
class RetryPolicy:
    """How often and how patiently to retry.

    ``attempts`` counts retries after the first try: ``attempts=3`` allows up to
    four calls. The n-th retry waits a uniform random time in
    ``[0, min(max_seconds, base_seconds * 2 ** (n - 1))]``.
    """

    attempts: int
    base_seconds: float
    max_seconds: float

    def __post_init__(self) -> None:
        if self.attempts < 0:
            raise ValueError(f"attempts must be >= 0, got {self.attempts}")
        if self.base_seconds < 0 or self.max_seconds < 0:
            raise ValueError("base_seconds and max_seconds must be >= 0")

    def backoff_ceiling(self, retry_number: int) -> float:
        """The longest jittered pause before retry ``retry_number`` (1-based)."""
        return _doubled(self.base_seconds, self.max_seconds, retry_number - 1)

    def server_pause_cap(self) -> float:
        """The longest server-requested pause we are willing to honour."""
        return max(self.max_seconds, SERVER_PAUSE_FLOOR_CAP)


def _doubled(first: float, cap: float, doublings: int) -> float:
    # Cap the exponent so a huge count cannot overflow the float.
    return min(cap, first * 2.0 ** min(doublings, _MAX_DOUBLINGS))


@dataclass(slots=True)
class Backoff:
    """Pauses for a loop that retries until it succeeds or is cancelled.

    ``next()`` returns ``first_seconds``, then twice that each call, never more than
    ``max_seconds``; ``reset()`` (after a success) starts again from ``first_seconds``.
    With ``jitter`` (``random.uniform``) each pause is drawn from ``[0, pause]`` instead,
    like ``retry_async``'s, so many clients that failed together do not retry together.
    """

    first_seconds: float
    max_seconds: float
    jitter: Jitter | None = None
    _failures: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.first_seconds < 0 or self.max_seconds < 0:
            raise ValueError("first_seconds and max_seconds must be >= 0")

    def next(self) -> float:
        """The pause to wait now; the one after it is twice as long (up to the cap)."""
        pause = _doubled(self.first_seconds, self.max_seconds, self._failures)
        self._failures = min(self._failures + 1, _MAX_DOUBLINGS)
        return pause if self.jitter is None else self.jitter(0.0, pause)

    def reset(self) -> None:
        """It worked: the next failure waits ``first_seconds`` again."""
        self._failures = 0


def _requested_pause(exc: BaseException) -> float | None:
    value = getattr(exc, "retry_after", None)
    # bool is an int subclass; a stray True must not mean "wait one second".
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if math.isnan(value):
        return None
    return max(0.0, float(value))


def retry_delay(
    policy: RetryPolicy, retry_number: int, exc: BaseException, jitter: Jitter
) -> float:
    """The pause before retry ``retry_number`` (1-based) after ``exc``."""
    requested = _requested_pause(exc)
    if requested is not None:
        return min(requested, policy.server_pause_cap())
    return jitter(0.0, policy.backoff_ceiling(retry_number))


async def retry_async(
    fn: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    retry_on: tuple[type[BaseException], ...],
    should_retry: Callable[[BaseException], bool] | None = None,
    on_retry: RetryHook | None = None,
    sleep: Sleep = asyncio.sleep,
    jitter: Jitter = random.uniform,
) -> T:
    """Await ``fn()`` and retry it on ``retry_on`` errors as ``policy`` allows.

    ``should_retry(error)``, when given, can refuse a retry the error's type allows
    (the error is then re-raised at once). ``on_retry(retry_number, error, delay)`` runs
    before each pause (``retry_number`` starts at 1). ``sleep`` and ``jitter`` are
    injectable so tests never really wait. When retries run out, the last error is
    re-raised as it was.
    """
    retry_number = 0
    while True:
        try:
            return await fn()
        except retry_on as exc:
            retry_number += 1
            if retry_number > policy.attempts:
                raise
            if should_retry is not None and not should_retry(exc):
                raise
            delay = retry_delay(policy, retry_number, exc, jitter)
            if on_retry is not None:
                on_retry(retry_number, exc, delay)
            await sleep(delay)


def retry_after_from_headers(
    headers: Mapping[str, str], *, now: float | None = None
) -> float | None:
    """Seconds the server asked us to wait, or None when it did not say.

    Reads ``retry-after-ms`` (non-standard, more precise), then ``Retry-After`` as
    seconds or as an HTTP date. Pass a case-insensitive mapping (httpx headers) or
    lowercase keys. A date in the past means "now" (0.0).
    """
    millis = _parse_seconds(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = _parse_seconds(raw)
    if seconds is not None:
        return seconds
    return _parse_http_date(raw, time.time() if now is None else now)


def _parse_seconds(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return max(0.0, value)


def _parse_http_date(raw: str, now: float) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        # HTTP dates are always GMT; a "-0000" offset parses as naive.
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)
