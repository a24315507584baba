"""Webhook signing: the exact string the README documents, and the replay cache (one skew
window of signatures, refused rather than forgotten)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from adapters.webhook.auth import sign, signed_bytes
from adapters.webhook.replay import ReplayCache
from core.errors import RequestRefused

README = Path(__file__).resolve().parent.parent / "README.md"
WORKED = re.compile(r"^(\d+)\.(POST|GET)\.(\S+?)\.(.*)\n-> (sha256=[0-9a-f]{64})$", re.MULTILINE)


def test_the_readme_worked_examples_are_what_the_gateway_checks() -> None:
    examples = WORKED.findall(README.read_text(encoding="utf-8"))

    assert len(examples) == 2
    for timestamp, method, target, body, signature in examples:
        raw = body.encode()
        assert (
            signed_bytes(timestamp, method, target, raw)
            == f"{timestamp}.{method}.{target}.{body}".encode()
        )
        assert sign("s3cret", timestamp, method, target, raw) == signature


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
