"""``/metrics`` after real turns through the webhook and the fake model: every family an
operator alerts on, with its type and labels, and no label that names a chat or a person;
and every metric the Grafana dashboard queries exists."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from tests import testroom_platform
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway
from tests.test_webhook_e2e import until, write_config

DASHBOARD = Path(__file__).resolve().parent.parent / "deploy" / "grafana-dashboard.json"
# Every label a chatgate family may have: none names a chat, a session or a person.
ALLOWED_LABELS = {"platform", "outcome", "provider", "model", "kind", "command", "status"}
ALLOWED_LABELS |= {"version", "python", "le"}
# An MCP server's name as configured in mcp.servers: the operator's word, never a person's.
ALLOWED_LABELS |= {"server"}
# Which tokens a count is of: input, output, cache_read, cache_write.
ALLOWED_LABELS |= {"type"}

EXPECTED = {
    "chatgate_db_commits": ("counter", set()),
    "chatgate_turns": ("counter", {"platform", "outcome"}),
    "chatgate_model_errors": ("counter", {"provider", "kind"}),
    "chatgate_model_tokens": ("counter", {"provider", "model", "kind", "type"}),
    "chatgate_deliveries": ("counter", {"platform", "outcome"}),
    "chatgate_turn_duration_seconds": ("histogram", {"platform"}),
    "chatgate_model_call_duration_seconds": ("histogram", {"provider", "model"}),
    "chatgate_delivery_duration_seconds": ("histogram", {"platform"}),
    "chatgate_inbox_wait_seconds": ("histogram", {"platform"}),
    "chatgate_inbox_backlog": ("gauge", set()),
    "chatgate_outbox_pending": ("gauge", set()),
    "chatgate_active_sessions": ("gauge", set()),
    "chatgate_cached_sessions": ("gauge", set()),
    "chatgate_session_cache_bytes": ("gauge", set()),
    "chatgate_adapter_connected": ("gauge", {"platform"}),
    "chatgate_store_writable": ("gauge", set()),
    "chatgate_build_info": ("gauge", {"version", "python"}),
    "process_resident_memory_bytes": ("gauge", set()),
}


async def scrape(gw: RunningGateway) -> dict[str, Metric]:
    response = await gw.client.get("/metrics")
    assert response.status_code == 200
    return {f.name: f for f in text_string_to_metric_families(response.text)}


def value(family: Metric, sample_name: str, **labels: str) -> float:
    [found] = [s.value for s in family.samples if s.name == sample_name and s.labels == labels]
    return found


async def test_a_real_turn_shows_in_every_family(home: Path, fake_openai: FakeOpenAIServer) -> None:
    write_config(home, model={"max_retries": 0})
    fake_openai.reply_text("hi there")
    fake_openai.fail(status=500)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        assert (await gw.say("hello", chat_id="c-secret-chat", user_id="u-secret")).is_success
        assert (await gw.say("again", chat_id="c-secret-chat", user_id="u-secret")).is_success
        await until(lambda: gw.gateway.db.commits > 0)
        families = await scrape(gw)

    for name, (kind, labels) in EXPECTED.items():
        assert families[name].type == kind, name
        for sample in families[name].samples:
            assert set(sample.labels) - {"le"} == labels, (name, sample)
    model = fake_openai.gateway_env()["CHATGATE_MODEL"]
    turns = families["chatgate_turns"]
    assert value(turns, "chatgate_turns_total", platform="webhook", outcome="done") == 1
    assert value(turns, "chatgate_turns_total", platform="webhook", outcome="failed") == 1
    errors = families["chatgate_model_errors"]
    assert value(errors, "chatgate_model_errors_total", provider="openai", kind="unavailable") == 1
    calls = families["chatgate_model_call_duration_seconds"]
    count = "chatgate_model_call_duration_seconds_count"
    assert value(calls, count, provider="openai", model=model) == 2
    tokens = families["chatgate_model_tokens"]
    output = value(
        tokens,
        "chatgate_model_tokens_total",
        provider="openai",
        model=model,
        kind="turn",
        type="output",
    )
    assert output == 2  # "hi there", as the fake model counts it
    waits = families["chatgate_inbox_wait_seconds"]
    assert value(waits, "chatgate_inbox_wait_seconds_count", platform="webhook") == 2
    deliveries = families["chatgate_deliveries"]
    pulled = value(deliveries, "chatgate_deliveries_total", platform="webhook", outcome="pulled")
    assert pulled == 2
    connected = families["chatgate_adapter_connected"]
    assert value(connected, "chatgate_adapter_connected", platform="webhook") == 1
    assert value(families["chatgate_db_commits"], "chatgate_db_commits_total") > 0


async def test_no_family_has_a_label_naming_a_chat_or_a_person(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("/status", chat_id="c-secret-chat", user_id="u-secret")
        await gw.say("hello", chat_id="c-secret-chat", user_id="u-secret")
        response = await gw.client.get("/metrics")
        families = await scrape(gw)

    assert "secret" not in response.text
    chatgate = [f for name, f in families.items() if name.startswith("chatgate_")]
    labels = {label for f in chatgate for s in f.samples for label in s.labels}
    assert labels <= ALLOWED_LABELS


@pytest.mark.usefixtures("testroom")
async def test_a_pushed_reply_is_counted_and_timed_and_a_broken_adapter_shows(home: Path) -> None:
    async with running_gateway(home, {}) as gw:
        said = await gw.client.post("/testroom/say", json={"text": "hello room"})
        assert said.status_code == 200
        before = await scrape(gw)
        room = gw.gateway.adapters[testroom_platform.NAME]
        assert isinstance(room, testroom_platform.RoomAdapter)
        room.broken = True
        after = await scrape(gw)

    deliveries = before["chatgate_deliveries"]
    sent = value(deliveries, "chatgate_deliveries_total", platform="testroom", outcome="sent")
    assert sent == 1
    timed = before["chatgate_delivery_duration_seconds"]
    assert value(timed, "chatgate_delivery_duration_seconds_count", platform="testroom") == 1
    connected = "chatgate_adapter_connected"
    assert value(before[connected], connected, platform="testroom") == 1
    assert value(after[connected], connected, platform="testroom") == 0


def dashboard_metric_names() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert exprs, "the dashboard queries nothing"
    return {name for expr in exprs for name in re.findall(r"\b(?:chatgate|process)_\w+", expr)}


async def test_every_metric_the_dashboard_queries_exists(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello")
        families = await scrape(gw)

    exposed = {f"{f.name}{suffix}" for f in families.values() for suffix in _suffixes(f.type)}
    assert dashboard_metric_names() - exposed == set()


def _suffixes(kind: str) -> tuple[str, ...]:
    if kind == "histogram":
        return ("_bucket", "_sum", "_count")
    if kind == "counter":
        return ("_total",)
    return ("",)
