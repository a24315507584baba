"""The audit ledger end to end: a turn through the webhook, read back from the table."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from core.audit.writer import AuditWriter
from core.clock import ManualClock
from core.store.audit import LEDGER
from core.store.audit_schema import audit
from gateway.features.audit import AuditFeature
from tests.direct_sql import DirectSql
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway
from tests.postgres import postgres_database
from tests.test_skills_e2e import SKILL
from tests.test_usage_e2e import PRICE, write_config

SAID = "please remember zanzibarian tea"
NOTE = {"target": "user", "action": "add", "content": "Likes oolongish tea"}
REPLY = "Noted, wombatish."
SECRET_WORDS = ("zanzibarian", "oolongish", "wombatish")
DAY = 86_400.0
T0 = 1_780_000_000.0


async def one_turn(gw: RunningGateway, fake: FakeOpenAIServer, user_id: str = "u1") -> str:
    """A turn with one tool call (``memory``) and a reply; its session id."""
    fake.reply_tool_call("memory", NOTE, call_id="call-1")
    fake.reply_text(REPLY)
    answer = await gw.say(SAID, chat_id=f"{user_id}-dm", user_id=user_id, message_id="m-1")
    assert answer.status_code == 200, answer.text
    session_id: str = answer.json()["session_id"]
    return session_id


async def audit_rows(url: str) -> list[dict[str, Any]]:
    async with DirectSql(url) as sql:
        rows = await sql.rows(LEDGER.order_by(audit.c.id))
    return [dict(r._mapping) for r in rows]


def detail(row: dict[str, Any]) -> dict[str, Any]:
    value = row["detail"]
    found: dict[str, Any] = json.loads(value) if isinstance(value, str) else value or {}
    return found


async def test_a_turn_with_a_tool_call_and_a_delivery_is_audited(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        session_id = await one_turn(gw, fake_openai)
        url = gw.settings.database_url
    rows = await audit_rows(url)

    assert [r["event"] for r in rows] == [
        "message_received",
        "turn_started",
        "model_call",
        "memory_write",
        "tool_call",
        "model_call",
        "turn_finished",
        "delivery_queued",
        "delivery_delivered",
    ]
    assert {r["session_id"] for r in rows[1:]} == {session_id}
    assert {(r["person"], r["platform"]) for r in rows} == {("webhook:u1", "webhook")}
    assert rows[0]["message_id"] == "m-1"


async def test_a_tool_call_is_audited_with_its_arguments_hashed(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await one_turn(gw, fake_openai)
        url = gw.settings.database_url
    (call,) = [detail(r) for r in await audit_rows(url) if r["event"] == "tool_call"]

    canonical = json.dumps(NOTE, sort_keys=True, separators=(",", ":"))
    assert call["tool"] == "memory"
    assert call["outcome"] == "ok"
    assert call["args_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()


async def test_model_calls_are_audited_with_their_tokens_and_outcome(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await one_turn(gw, fake_openai)
        url = gw.settings.database_url
    calls = [detail(r) for r in await audit_rows(url) if r["event"] == "model_call"]

    assert [(c["outcome"], c["output_tokens"], c["cost"]) for c in calls][1] == ("ok", 2, None)
    assert all(c["input_tokens"] > 0 and c["seconds"] >= 0 for c in calls)


async def test_no_message_text_is_anywhere_in_the_audit(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await one_turn(gw, fake_openai)
        url = gw.settings.database_url
    rows = await audit_rows(url)

    every_cell = " ".join(str(value) for row in rows for value in row.values())
    assert rows
    assert [w for w in SECRET_WORDS if w in every_cell.lower()] == []


async def test_a_failing_audit_write_does_not_fail_the_turn(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        async with DirectSql(gw.settings.database_url) as sql, sql.begin() as conn:
            await conn.execute(
                text(
                    "CREATE TRIGGER audit_refuses BEFORE INSERT ON audit "
                    "BEGIN SELECT RAISE(ABORT, 'audit refuses'); END"
                )
            )
        fake_openai.reply_text(REPLY)
        answer = await gw.say("hello there")
        writer = gw.gateway.core.audit
    assert isinstance(writer, AuditWriter)

    assert answer.json()["replies"] == [{"text": REPLY}]
    assert writer.failed > 0


async def test_old_audit_events_are_pruned(home: Path, fake_openai: FakeOpenAIServer) -> None:
    (home / "config.yaml").write_text("audit:\n  retention_days: 30\n", encoding="utf-8")
    clock = ManualClock(T0)
    async with running_gateway(home, fake_openai.gateway_env(), clock=clock) as gw:
        fake_openai.reply_text(REPLY)
        await gw.say("an old hello", chat_id="old")
    clock.advance(31 * DAY)
    async with running_gateway(home, fake_openai.gateway_env(), clock=clock) as gw:
        assert "audit-retention" in {job.id for job in gw.gateway.scheduler.jobs()}
        fake_openai.reply_text(REPLY)
        await gw.say("a new hello", chat_id="new")
        retention = gw.gateway.feature(AuditFeature).retention
        assert retention is not None
        await retention.check()
        url = gw.settings.database_url
    rows = await audit_rows(url)

    assert {r["chat_key"] for r in rows} == {"webhook:new"}
    assert min(r["at"] for r in rows) >= T0 + 31 * DAY
    async with DirectSql(url) as sql:
        whos = await sql.rows(text("SELECT chat_key FROM audit_who"))
    assert {w.chat_key for w in whos} == {"webhook:new"}  # the old chat's row went too


async def test_an_audit_turned_off_records_nothing(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("audit:\n  enabled: false\n", encoding="utf-8")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        fake_openai.reply_text(REPLY)
        answer = await gw.say("hello there")
        url = gw.settings.database_url

    assert answer.status_code == 200
    assert await audit_rows(url) == []


async def test_the_audit_on_postgresql(home: Path, fake_openai: FakeOpenAIServer) -> None:
    async with postgres_database() as pg_url:
        env = fake_openai.gateway_env(CHATGATE_DATABASE_URL=pg_url)
        async with running_gateway(home, env) as gw:
            session_id = await one_turn(gw, fake_openai)
        rows = await audit_rows(pg_url)

    assert [r["event"] for r in rows][-2:] == ["delivery_queued", "delivery_delivered"]
    assert {r["session_id"] for r in rows[1:]} == {session_id}
    assert detail(next(r for r in rows if r["event"] == "tool_call"))["tool"] == "memory"


async def test_forget_me_leaves_nothing_under_their_id(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await one_turn(gw, fake_openai, user_id="alice")
        await gw.say("/forget-me confirm", chat_id="alice-dm", user_id="alice")
        url = gw.settings.database_url
    rows = await audit_rows(url)

    assert [r for r in rows if "alice" in f"{r['person']} {r['chat_key']}"] == []
    assert [r["event"] for r in rows].count("person_forgotten") == 1


async def test_metrics_count_the_audit_writers_events(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        metrics = (await gw.client.get("/metrics")).text

    assert 'chatgate_audit_events_total{outcome="dropped"} 0.0' in metrics


async def test_a_skill_written_by_the_model_is_audited(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    create = {"action": "create", "name": "release-notes", "content": SKILL}
    fake_openai.reply_tool_call("skill_manage", {"operations": [create]})
    fake_openai.reply_text("Saved.")
    fake_openai.reply_tool_call("skill_manage", {"operations": [{**create, "name": "../x"}]})
    fake_openai.reply_text("That did not work.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("save how we write release notes as a skill")
        await gw.say("and once more, badly")
        url = gw.settings.database_url
    rows = await audit_rows(url)
    outcomes = [detail(r)["outcome"] for r in rows if r["event"] == "tool_call"]

    assert outcomes == ["ok", "error"]
    assert [r["event"] for r in rows].count("skill_write") == 1


async def test_a_model_call_is_audited_at_the_price_the_usage_ledger_charged(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, pricing={"openai": {"fake-model": PRICE}})
    fake_openai.cache_read_tokens = 3
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await one_turn(gw, fake_openai)
        url = gw.settings.database_url
    calls = [detail(r) for r in await audit_rows(url) if r["event"] == "model_call"]
    async with DirectSql(url) as sql:
        charged = [r.cost for r in await sql.rows(text("SELECT cost FROM usage ORDER BY id"))]

    assert [c["cache_read_tokens"] for c in calls] == [3, 3]
    assert [c["cost"] for c in calls] == pytest.approx(charged)
    assert all(cost > 0 for cost in charged)
