"""core.retry: backoff, server-named pauses, give-up behaviour, header parsing, Backoff."""

from __future__ import annotations

import pytest

from core.errors import ModelRequestError, ProviderUnavailable, RateLimited
from core.retry import Backoff, RetryPolicy, retry_after_from_headers, retry_async


class FakeSleep:
    """Records requested pauses instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


class ScriptedCall:
    """A call that raises each of ``errors`` in turn, then returns ``result``."""

    def __init__(self, result: str, errors: list[BaseException]) -> None:
        self.result = result
        self.pending = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.pending:
            raise self.pending.pop(0)
        return self.result


def top_of_range(low: float, high: float) -> float:
    return high


POLICY = RetryPolicy(attempts=3, base_seconds=1.0, max_seconds=5.0)


async def test_success_first_try_never_sleeps() -> None:
    sleep = FakeSleep()
    call = ScriptedCall("ok", [])
    result = await retry_async(call, policy=POLICY, retry_on=(ProviderUnavailable,), sleep=sleep)
    assert result == "ok"
    assert sleep.delays == []


async def test_backoff_doubles_and_is_capped() -> None:
    sleep = FakeSleep()
    call = ScriptedCall("ok", [ProviderUnavailable("down")] * 3)
    policy = RetryPolicy(attempts=5, base_seconds=2.0, max_seconds=5.0)
    result = await retry_async(
        call, policy=policy, retry_on=(ProviderUnavailable,), sleep=sleep, jitter=top_of_range
    )
    assert result == "ok"
    assert sleep.delays == [2.0, 4.0, 5.0]


async def test_full_jitter_stays_within_ceiling() -> None:
    sleep = FakeSleep()
    call = ScriptedCall("ok", [ProviderUnavailable("down")] * 3)
    await retry_async(call, policy=POLICY, retry_on=(ProviderUnavailable,), sleep=sleep)
    for retry_number, delay in enumerate(sleep.delays, start=1):
        assert 0.0 <= delay <= POLICY.backoff_ceiling(retry_number)


async def test_attempts_count_retries_after_first_try() -> None:
    sleep = FakeSleep()
    errors: list[BaseException] = [ProviderUnavailable(f"down {i}") for i in range(10)]
    call = ScriptedCall("never", errors)
    with pytest.raises(ProviderUnavailable, match="down 3"):
        await retry_async(call, policy=POLICY, retry_on=(ProviderUnavailable,), sleep=sleep)
    assert call.calls == 4
    assert len(sleep.delays) == 3


async def test_zero_attempts_means_one_call() -> None:
    sleep = FakeSleep()
    call = ScriptedCall("never", [ProviderUnavailable("down")])
    policy = RetryPolicy(attempts=0, base_seconds=1.0, max_seconds=1.0)
    with pytest.raises(ProviderUnavailable):
        await retry_async(call, policy=policy, retry_on=(ProviderUnavailable,), sleep=sleep)
    assert sleep.delays == []


async def test_other_errors_are_not_retried() -> None:
    sleep = FakeSleep()
    call = ScriptedCall("never", [ModelRequestError("bad request")])
    with pytest.raises(ModelRequestError):
        await retry_async(call, policy=POLICY, retry_on=(ProviderUnavailable,), sleep=sleep)
    assert call.calls == 1


async def test_retry_after_is_obeyed_exactly() -> None:
    sleep = FakeSleep()
    call = ScriptedCall("ok", [RateLimited("slow down", retry_after=7.5)])
    await retry_async(call, policy=POLICY, retry_on=(RateLimited,), sleep=sleep)
    assert sleep.delays == [7.5]


async def test_retry_after_zero_means_retry_now() -> None:
    sleep = FakeSleep()
    call = ScriptedCall("ok", [RateLimited("slow down", retry_after=0)])
    await retry_async(call, policy=POLICY, retry_on=(RateLimited,), sleep=sleep)
    assert sleep.delays == [0.0]


async def test_retry_after_is_capped_at_least_at_sixty_seconds() -> None:
    sleep = FakeSleep()
    call = ScriptedCall("ok", [RateLimited("slow", retry_after=3600), RateLimited("slow")])
    await retry_async(
        call, policy=POLICY, retry_on=(RateLimited,), sleep=sleep, jitter=top_of_range
    )
    # 3600 capped to max(5, 60); the second error names no pause, so backoff applies.
    assert sleep.delays == [60.0, 2.0]


async def test_retry_after_cap_follows_a_larger_max_seconds() -> None:
    sleep = FakeSleep()
    policy = RetryPolicy(attempts=1, base_seconds=1.0, max_seconds=120.0)
    call = ScriptedCall("ok", [RateLimited("slow", retry_after=90)])
    await retry_async(call, policy=policy, retry_on=(RateLimited,), sleep=sleep)
    assert sleep.delays == [90.0]


async def test_on_retry_sees_number_error_and_delay() -> None:
    seen: list[tuple[int, str, float]] = []
    first, second = ProviderUnavailable("a"), ProviderUnavailable("b")
    call = ScriptedCall("ok", [first, second])
    await retry_async(
        call,
        policy=POLICY,
        retry_on=(ProviderUnavailable,),
        on_retry=lambda n, exc, delay: seen.append((n, str(exc), delay)),
        sleep=FakeSleep(),
        jitter=top_of_range,
    )
    assert seen == [(1, "a", 1.0), (2, "b", 2.0)]


async def test_should_retry_can_refuse_a_retry_the_type_allows() -> None:
    sleep = FakeSleep()
    final = ProviderUnavailable("final")
    call = ScriptedCall("ok", [ProviderUnavailable("first"), final])
    with pytest.raises(ProviderUnavailable, match="final"):
        await retry_async(
            call,
            policy=POLICY,
            retry_on=(ProviderUnavailable,),
            should_retry=lambda error: error is not final,
            sleep=sleep,
        )
    assert call.calls == 2
    assert len(sleep.delays) == 1


def test_policy_rejects_negative_values() -> None:
    with pytest.raises(ValueError, match="attempts"):
        RetryPolicy(attempts=-1, base_seconds=1.0, max_seconds=1.0)
    with pytest.raises(ValueError, match="base_seconds"):
        RetryPolicy(attempts=1, base_seconds=-1.0, max_seconds=1.0)


def pauses(backoff: Backoff, n: int) -> list[float]:
    return [backoff.next() for _ in range(n)]


@pytest.mark.parametrize(
    ("first", "cap", "expected"),
    [
        # Telegram's connect loop.
        (2.0, 60.0, [2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]),
        # Telegram's poll loop, Discord's reconnect loop, the outbox's retries.
        (1.0, 60.0, [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]),
        # Discord's catch-up loop.
        (5.0, 300.0, [5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0]),
    ],
)
def test_backoff_starts_at_first_doubles_and_stays_at_the_cap(
    first: float, cap: float, expected: list[float]
) -> None:
    assert pauses(Backoff(first, cap), len(expected)) == expected


def test_backoff_reset_starts_again_from_the_first_pause() -> None:
    backoff = Backoff(1.0, 60.0)
    assert pauses(backoff, 3) == [1.0, 2.0, 4.0]
    backoff.reset()
    assert pauses(backoff, 2) == [1.0, 2.0]


def test_backoff_never_overflows_however_long_it_fails() -> None:
    backoff = Backoff(1.0, 60.0)
    assert pauses(backoff, 5_000)[-1] == 60.0


def test_backoff_jitter_draws_each_pause_from_zero_to_the_pause() -> None:
    drawn: list[tuple[float, float]] = []

    def halfway(low: float, high: float) -> float:
        drawn.append((low, high))
        return (low + high) / 2

    backoff = Backoff(2.0, 5.0, jitter=halfway)
    assert pauses(backoff, 3) == [1.0, 2.0, 2.5]
    assert drawn == [(0.0, 2.0), (0.0, 4.0), (0.0, 5.0)]


def test_backoff_rejects_negative_values() -> None:
    with pytest.raises(ValueError, match="first_seconds"):
        Backoff(-1.0, 1.0)
    with pytest.raises(ValueError, match="max_seconds"):
        Backoff(1.0, -1.0)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after": "12"}, 12.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "nan"}, None),
    ],
)
def test_retry_after_from_headers_seconds(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_from_headers(headers) == expected


def test_retry_after_from_headers_http_date() -> None:
    now = 1_780_000_000.0
    later = "Thu, 28 May 2026 20:27:10 GMT"  # 1_780_000_030
    assert retry_after_from_headers({"retry-after": later}, now=now) == pytest.approx(30.0)


def test_retry_after_from_headers_past_date_means_now() -> None:
    past = "Thu, 01 Jan 2026 00:00:00 GMT"
    assert retry_after_from_headers({"retry-after": past}, now=1_780_000_000.0) == 0.0
