"""Budgets' running sums (``core.usage.budgets.RunningSums``): each check reads only the
usage rows added since the last one, yet always agrees with a sum over every row, and a
forgetting's deleted rows stop counting within ``RESEED_SECONDS``."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import delete

from core.clock import ManualClock
from core.store.db import SessionDB
from core.store.schema_version import upgrade_schema
from core.store.usage import Scope, UsageRecord, Used
from core.store.usage_schema import usage
from core.usage.budgets import RESEED_SECONDS, RunningSums
from tests.direct_sql import DirectSql

MONTH = 1_780_000_000.0
DAY = MONTH + 9 * 86_400
CHAT = Scope(chat_key="webhook:c1", kinds=("turn", "compaction"))
SCOPES = (Scope(), CHAT, Scope(person="webhook:alice", kinds=("turn",)), Scope(platform="x"))


@pytest.fixture
async def url(tmp_path: Path) -> str:
    found = f"sqlite:///{tmp_path / 'state.db'}"
    await upgrade_schema(found)
    return found


@pytest.fixture
async def db(url: str) -> AsyncIterator[SessionDB]:
    async with SessionDB(url) as opened:
        yield opened


def call(rng: random.Random) -> UsageRecord:
    return UsageRecord(
        at=rng.choice((MONTH - 5, MONTH + 1, DAY - 1, DAY + 1)),
        kind=rng.choice(("turn", "compaction", "review")),
        provider="openai",
        model="m",
        input_tokens=rng.randrange(1, 500),
        output_tokens=rng.randrange(0, 50),
        cost=rng.choice((None, 0.25, 1.5)),
        chat_key=rng.choice(("webhook:c1", "webhook:c2", None)),
        person=rng.choice(("webhook:alice", "webhook:bob")),
        platform=rng.choice(("webhook", "x")),
    )


async def add(db: SessionDB, records: list[UsageRecord]) -> None:
    for record in records:
        await db.usage.add(record)


async def summed(db: SessionDB, scope: Scope) -> Used:
    used, _ = await db.usage.used_after(scope, day_start=DAY, month_start=MONTH)
    return used


async def test_running_sums_agree_with_every_row_however_the_rows_arrive(db: SessionDB) -> None:
    rng = random.Random(7)
    sums = RunningSums(db.usage, ManualClock(DAY + 60))
    for _ in range(6):
        await add(db, [call(rng) for _ in range(rng.randrange(0, 9))])
        for scope in SCOPES:
            running = await sums.used(scope, day_start=DAY, month_start=MONTH)
            assert running == await summed(db, scope)
    assert (await sums.used(CHAT, day_start=DAY, month_start=MONTH)).month_tokens > 0


async def test_a_forgotten_persons_calls_stop_counting_within_the_reseed(
    db: SessionDB, url: str
) -> None:
    clock = ManualClock(DAY + 60)
    sums = RunningSums(db.usage, clock)
    alice = UsageRecord(
        at=DAY + 1,
        kind="turn",
        provider="p",
        model="m",
        input_tokens=100,
        output_tokens=0,
        person="webhook:alice",
        chat_key="webhook:c1",
    )
    await add(db, [alice, alice])
    bob = replace(alice, person="webhook:bob", input_tokens=7)
    await add(db, [bob])
    assert (await sums.used(Scope(), day_start=DAY, month_start=MONTH)).day_tokens == 207
    async with DirectSql(url) as sql, sql.begin() as conn:
        await conn.execute(delete(usage).where(usage.c.person == "webhook:alice"))
    await add(db, [bob])  # a row past the newest id seen still counts at once
    assert (await sums.used(Scope(), day_start=DAY, month_start=MONTH)).day_tokens == 214
    clock.advance(RESEED_SECONDS)
    assert (await sums.used(Scope(), day_start=DAY, month_start=MONTH)).day_tokens == 14


async def test_deleting_the_newest_rows_sums_again_at_once(db: SessionDB, url: str) -> None:
    sums = RunningSums(db.usage, ManualClock(DAY + 60))
    rng = random.Random(3)
    await add(db, [call(rng) for _ in range(5)])
    await sums.used(Scope(), day_start=DAY, month_start=MONTH)
    async with DirectSql(url) as sql, sql.begin() as conn:
        newest = (await conn.execute(usage.select().order_by(usage.c.id.desc()))).first()
        assert newest is not None
        await conn.execute(delete(usage).where(usage.c.id == newest.id))
    running = await sums.used(Scope(), day_start=DAY, month_start=MONTH)
    assert running == await summed(db, Scope())
