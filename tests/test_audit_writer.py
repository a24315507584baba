"""The audit writer and its telemetry over a real SessionDB (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from core.audit.telemetry import AuditTelemetry
from core.audit.writer import AuditWriter
from core.clock import ManualClock
from core.store.db import SessionDB
from core.telemetry import NO_TELEMETRY, ModelCall
from core.usage.pricing import Tokens
from tests.test_store import T0, db_url, migrate

__all__ = ["db_url"]  # the fixture, imported for this module's tests


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[SessionDB]:
    await migrate(db_url)
    async with SessionDB(db_url) as opened:
        yield opened


def price(provider: str, model: str, tokens: Tokens) -> float | None:
    return tokens.total / 1000 if model == "m1" else None


def broken_price(provider: str, model: str, tokens: Tokens) -> float | None:
    raise ValueError("no price list")


async def test_a_model_call_is_priced_by_cost_of(db: SessionDB) -> None:
    async with AuditWriter(db.audit, ManualClock(T0)) as writer:
        telemetry = AuditTelemetry(NO_TELEMETRY, writer, cost_of=price)
        telemetry.model_call(ModelCall("openai", "m1", 0.5, input_tokens=300, output_tokens=200))
        telemetry.model_call(ModelCall("openai", "m2", 0.5, input_tokens=1, output_tokens=1))

    rows = await db.audit.rows()
    assert [r.detail["cost"] for r in rows] == [0.5, None]


async def test_a_pricing_that_fails_leaves_the_cost_empty(db: SessionDB) -> None:
    async with AuditWriter(db.audit, ManualClock(T0)) as writer:
        telemetry = AuditTelemetry(NO_TELEMETRY, writer, cost_of=broken_price)
        telemetry.model_call(ModelCall("openai", "m1", 0.5, input_tokens=3, output_tokens=2))

    [row] = await db.audit.rows()
    assert row.detail["cost"] is None


async def test_a_turn_is_recorded_with_its_outcome_and_usage(db: SessionDB) -> None:
    async with AuditWriter(db.audit, ManualClock(T0)) as writer:
        telemetry = AuditTelemetry(NO_TELEMETRY, writer)
        with telemetry.agent("openai", "m1") as notes:
            notes.usage(120, 30)
        with pytest.raises(ValueError, match="broke"), telemetry.agent("openai", "m1"):
            raise ValueError("the model broke")
        with pytest.raises(asyncio.CancelledError), telemetry.agent("openai", "m1"):
            raise asyncio.CancelledError

    rows = await db.audit.rows()
    assert [(r.event, r.detail) for r in rows] == [
        ("turn_started", {"provider": "openai", "model": "m1"}),
        ("turn_finished", {"outcome": "ok", "input_tokens": 120, "output_tokens": 30}),
        ("turn_started", {"provider": "openai", "model": "m1"}),
        ("turn_finished", {"outcome": "error", "input_tokens": 0, "output_tokens": 0}),
        ("turn_started", {"provider": "openai", "model": "m1"}),
        ("turn_finished", {"outcome": "cancelled", "input_tokens": 0, "output_tokens": 0}),
    ]


async def test_a_full_queue_drops_and_counts(db: SessionDB) -> None:
    writer = AuditWriter(db.audit, ManualClock(T0), max_queue=2)
    for _ in range(5):  # the writer task is not running: nothing drains the queue
        writer.record("turn_started")

    assert writer.dropped == 3


async def test_closing_writes_every_queued_event(db: SessionDB) -> None:
    async with AuditWriter(db.audit, ManualClock(T0), batch=3) as writer:
        for n in range(10):
            writer.record("tool_call", {"n": n})

    assert [r.detail["n"] for r in await db.audit.rows()] == list(range(10))
    assert writer.written == 10
