"""Budgets end to end: a turn over a budget gets one line and never reaches the model,
the owners hear once, and the next period lets it through; background work over its
budget is skipped without touching the chats."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import yaml
from sqlalchemy import select

from core.clock import ManualClock
from core.store.schema import cron_runs, outbox, reviews
from core.usage.periods import Calendar
from gateway.features.review import Review
from tests.direct_sql import DirectSql
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway
from tests.postgres import postgres_database
from tests.test_cli import chatgate, cli_env
from tests.test_cron_e2e import HOUR, create_in_chat, pulled, run_due

PRICING = {"openai": {"fake-model": {"input": 1.0, "output": 2.0}}}
REVIEW = "[Background review"
TINY = 1e-9  # any priced call uses it up

# (budgets, who speaks after alice's first turn in c1, the line's budget, its period)
CASES = [
    ({"global": {"daily_tokens": 1}}, ("c2", "bob"), "The gateway's daily token", "day"),
    (
        {"per_platform": {"webhook": {"monthly_tokens": 1}}},
        ("c2", "bob"),
        "The webhook monthly token",
        "month",
    ),
    ({"per_chat": {"daily_cost": TINY}}, ("c1", "bob"), "This chat's daily cost", "day"),
    (
        {"per_chat": {"daily_tokens": 10**6, "overrides": {"webhook:c1": {"daily_tokens": 1}}}},
        ("c1", "bob"),
        "This chat's daily token",
        "day",
    ),
    ({"per_person": {"monthly_cost": TINY}}, ("c2", "alice"), "Your monthly cost", "month"),
    ({"per_person": {"daily_tokens": 1}}, ("c2", "alice"), "Your daily token", "day"),
]


def write_config(home: Path, budgets: dict[str, Any], **more: Any) -> None:
    config = {"webhook": {"owners": ["boss"]}, "pricing": PRICING, "budgets": budgets, **more}
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def text_of(response: Any) -> str:
    [reply] = response.json()["replies"]
    text: str = reply["text"]
    return text


async def owner_notices(gw: RunningGateway) -> list[str]:
    async with DirectSql(gw.settings.database_url) as sql:
        rows = await sql.rows(select(outbox.c.text).where(outbox.c.chat_id == "boss"))
    return [r.text for r in rows]


@pytest.mark.parametrize(("budgets", "who", "budget", "period"), CASES)
async def test_a_turn_over_a_budget_is_refused_until_the_period_ends(
    home: Path,
    fake_openai: FakeOpenAIServer,
    budgets: dict[str, Any],
    who: tuple[str, str],
    budget: str,
    period: str,
) -> None:
    write_config(home, budgets)
    await refused_then_reset(home, fake_openai.gateway_env(), fake_openai, who, budget, period)


async def refused_then_reset(
    home: Path,
    env: dict[str, str],
    fake_openai: FakeOpenAIServer,
    who: tuple[str, str],
    budget: str,
    period: str,
) -> None:
    clock, calendar = ManualClock(), Calendar(ZoneInfo("UTC"))
    chat, user = who
    async with running_gateway(home, env, clock=clock) as gw:
        first = await gw.say("hello there", chat_id="c1", user_id="alice")
        calls = len(fake_openai.requests)
        refused = await gw.say("again", chat_id=chat, user_id=user)
        twice = await gw.say("and again", chat_id=chat, user_id=user)
        asked = len(fake_openai.requests) - calls
        ends = (calendar.day if period == "day" else calendar.month)(clock.now()).end
        clock.advance(ends - clock.now())
        after = await gw.say("a new period", chat_id=chat, user_id=user)
        told = await owner_notices(gw)

    assert text_of(first) == "echo: hello there"
    line = f"{budget} budget is used up; it resets at {calendar.shown(ends)}."
    assert text_of(refused) == text_of(twice) == line
    assert asked == 0  # the model never saw a request over the budget
    assert text_of(after) == "echo: a new period"
    [notice] = told  # once per budget and period, however many turns were refused
    assert notice.startswith("Budget reached: ")


async def test_background_work_over_its_budget_is_skipped_and_never_charged_to_a_chat(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(
        home,
        {"background": {"daily_tokens": 1}, "per_chat": {"daily_tokens": 10**6}},
        memory={"nudge_interval": 1},
    )
    fake_openai.reply_text("Nothing to save.", when=REVIEW)
    fake_openai.reply_text("Nothing to save.", when=REVIEW)
    clock = ManualClock()
    async with running_gateway(home, fake_openai.gateway_env(), clock=clock) as gw:
        service = gw.gateway.feature(Review).service
        assert service is not None
        await gw.say("first", chat_id="c1", user_id="alice")
        await service.wait()
        second = await gw.say("second", chat_id="c1", user_id="alice")
        await service.wait()
        skipped = len(fake_openai.requests_for(REVIEW))
        clock.advance(Calendar(ZoneInfo("UTC")).day(clock.now()).end - clock.now())
        await gw.say("third", chat_id="c1", user_id="alice")
        await service.wait()
        async with DirectSql(gw.settings.database_url) as sql:
            statuses = [
                r.status for r in await sql.rows(select(reviews.c.status).order_by(reviews.c.id))
            ]

    assert text_of(second) == "echo: second"  # the chat's turns go on
    assert skipped == 1  # the second review never reached the model
    assert len(fake_openai.requests_for(REVIEW)) == 2  # a new day: reviews run again
    assert statuses == ["done", "failed", "done"]


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    async with postgres_database() as url:
        yield url


async def test_a_budget_stops_a_turn_on_postgres(
    home: Path, pg_url: str, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, {"per_chat": {"daily_tokens": 1}})
    env = fake_openai.gateway_env(CHATGATE_DATABASE_URL=pg_url)
    await refused_then_reset(
        home, env, fake_openai, ("c1", "bob"), "This chat's daily token", "day"
    )
    done = chatgate("usage", "--json", "--by", "chat", "--since", "2000-01-01", env=cli_env(**env))
    rows = {row["chat"]: row["calls"] for row in json.loads(done.stdout)["rows"]}
    assert rows == {"webhook:c1": 2}  # the first turn and the one after the reset


async def test_a_cron_run_over_the_background_budget_is_skipped_quietly(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, {"background": {"daily_tokens": 1}})
    clock = ManualClock()
    async with running_gateway(home, fake_openai.gateway_env(), clock=clock) as gw:
        await create_in_chat(gw, fake_openai, schedule="every 1h")
        clock.advance(HOUR)
        fake_openai.reply_text("Two PRs are waiting for review.")
        await run_due(gw)
        calls = len(fake_openai.requests)
        clock.advance(HOUR)
        await run_due(gw)
        skipped = len(fake_openai.requests) - calls
        replies = await pulled(gw)
        async with DirectSql(gw.settings.database_url) as sql:
            runs = await sql.rows(select(cron_runs.c.status).order_by(cron_runs.c.id))

    assert skipped == 0
    assert [r.status for r in runs] == ["ok", "skipped"]
    assert replies == ["Scheduled.", "Two PRs are waiting for review."]  # nothing about it
    kinds = {row["kind"]: row for row in usage_rows("kind")}
    assert kinds["cron"]["calls"] == 1
    people = {row["person"] for row in usage_rows("person")}
    assert people == {"webhook:u1", None}  # the chat turn's person; cron has none


def usage_rows(by: str) -> list[dict[str, Any]]:
    done = chatgate("usage", "--json", "--by", by, "--since", "2000-01-01", env=cli_env())
    rows: list[dict[str, Any]] = json.loads(done.stdout)["rows"]
    return rows
