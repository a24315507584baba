"""OpenTelemetry with the GenAI conventions, sent to a fake OTLP collector on 127.0.0.1
by the real exporters, after a real turn with a tool call through the webhook."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.otlp_collector import FakeCollector
from tests.gateway_server import running_gateway
from tests.test_webhook_e2e import AddTool, inbox_rows, write_config

SECRET_TEXT = "pineapple-marmalade-7"


async def test_a_turn_is_an_invoke_agent_span_with_its_tool_as_a_child(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)
    fake_openai.reply_tool_call("add", {"a": 2, "b": 3}, call_id="call_add")
    fake_openai.reply_text("2 + 3 = 5")
    async with FakeCollector() as collector:
        env = fake_openai.gateway_env(OTEL_EXPORTER_OTLP_ENDPOINT=collector.url)
        async with running_gateway(home, env, tools=[AddTool()]) as gw:
            assert (await gw.say(f"what is 2 + 3? {SECRET_TEXT}")).status_code == 200
            [item] = await inbox_rows(gw)
        # leaving the gateway flushed the exporters

    spans = {name: (attrs, span_id, parent) for name, attrs, span_id, parent in collector.spans}
    agent, agent_id, _ = spans["invoke_agent chatgate"]
    assert agent["gen_ai.operation.name"] == "invoke_agent"
    assert agent["gen_ai.provider.name"] == "openai"
    assert agent["gen_ai.request.model"] == "fake-model"
    assert agent["gen_ai.usage.input_tokens"] > 0
    assert agent["chatgate.turn_id"] == str(item.id)
    tool, _, tool_parent = spans["execute_tool add"]
    assert tool["gen_ai.tool.name"] == "add"
    assert tool["gen_ai.tool.call.id"] == "call_add"
    assert tool_parent == agent_id
    durations = collector.metrics["gen_ai.client.operation.duration"]
    assert {p["gen_ai.request.model"] for p in durations} == {"fake-model"}
    tokens = collector.metrics["gen_ai.client.token.usage"]
    assert {p["gen_ai.token.type"] for p in tokens} == {"input", "output"}
    sent = repr(collector.spans) + repr(collector.metrics)
    assert SECRET_TEXT not in sent
