"""The webhook's replay cache: one skew window of signatures, refused rather than forgotten."""

from __future__ import annotations

import pytest

from adapters.webhook.replay import ReplayCache
from core.errors import RequestRefused


def test_the_replay_cache_forgets_a_signature_when_its_window_ends() -> None:
    cache = ReplayCache(capacity=10)

    assert not cache.seen(b"a", now=100.0, expires_at=400.0)
    assert cache.seen(b"a", now=399.0, expires_at=400.0)
    assert not cache.seen(b"b", now=401.0, expires_at=700.0)
    assert len(cache) == 1  # "a" expired; a replay of it is stale (401) by then anyway


def test_a_full_replay_cache_refuses_rather_than_forgets() -> None:
    cache = ReplayCache(capacity=2)
    cache.seen(b"a", now=0.0, expires_at=300.0)
    cache.seen(b"b", now=0.0, expires_at=300.0)

    with pytest.raises(RequestRefused) as refused:
        cache.seen(b"c", now=1.0, expires_at=301.0)

    assert refused.value.status == 503
    assert cache.seen(b"a", now=2.0, expires_at=300.0)  # still remembered
    assert not cache.seen(b"c", now=300.5, expires_at=600.0)  # room once "a", "b" expire
