"""The anthropic provider, through the real anthropic client against a fake server."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator

import pytest

from core.errors import (
    ConfigError,
    ModelRequestError,
    ProviderUnavailable,
    RateLimited,
)
from core.models.anthropic_client import AnthropicModel, to_anthropic_messages, tool_input
from core.models.base import ChatMessage, ModelConfig, ModelRequest, ToolCall, ToolSpec
from core.models.factory import build_model_client
from core.models.retrying import RetryingModel
from tests.fakes.anthropic_server import FakeAnthropicServer

SYSTEM = "You are chatgate.\n<stable prefix>\n"
MEMORY_TOOL = ToolSpec(
    name="memory",
    description="Read and write long-term notes.",
    parameters={"type": "object", "properties": {"action": {"type": "string"}}},
)


def config_for(fake: FakeAnthropicServer) -> ModelConfig:
    return ModelConfig(
        provider="anthropic",
        model="claude-test",
        base_url=fake.base_url,
        api_key="sk-ant-test",
        timeout_seconds=5.0,
        retry_base_seconds=0.01,
        retry_max_seconds=0.05,
    )


@pytest.fixture
async def model(fake_anthropic: FakeAnthropicServer) -> AsyncIterator[AnthropicModel]:
    client = AnthropicModel(config_for(fake_anthropic))
    yield client
    await client.aclose()


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


async def test_system_block_is_cached(
    fake_anthropic: FakeAnthropicServer, model: AnthropicModel
) -> None:
    reply = await model.complete(ModelRequest(system=SYSTEM, messages=[user("hi")]))
    assert reply.content == "echo: hi"
    assert reply.finish_reason == "stop"
    sent = fake_anthropic.requests[0]
    assert sent["system"] == [
        {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}
    ]
    assert sent["messages"] == [{"role": "user", "content": "hi"}]
    assert sent["model"] == "claude-test"
    assert "tools" not in sent


async def test_usage_counts_cached_prompt_tokens(model: AnthropicModel) -> None:
    reply = await model.complete(ModelRequest(system=SYSTEM, messages=[user("hi")]))
    # The fake reports 10 fresh + 90 cache-read input tokens.
    assert (reply.input_tokens, reply.output_tokens) == (100, 5)
    assert (reply.cache_read_tokens, reply.cache_write_tokens) == (90, 0)


async def test_cache_writes_are_reported(
    fake_anthropic: FakeAnthropicServer, model: AnthropicModel
) -> None:
    fake_anthropic.cache_read_tokens = 0
    fake_anthropic.cache_write_tokens = 1500
    reply = await model.complete(ModelRequest(system=SYSTEM, messages=[user("hi")]))
    assert (reply.cache_read_tokens, reply.cache_write_tokens) == (0, 1500)
    assert reply.input_tokens == 1510


async def test_last_tool_marks_the_cache_breakpoint(
    fake_anthropic: FakeAnthropicServer, model: AnthropicModel
) -> None:
    search = ToolSpec(name="session_search", description="Search.", parameters={"type": "object"})
    await model.complete(
        ModelRequest(system=SYSTEM, messages=[user("hi")], tools=[MEMORY_TOOL, search])
    )
    first, last = fake_anthropic.requests[0]["tools"]
    assert "cache_control" not in first
    assert last == {
        "name": "session_search",
        "description": "Search.",
        "input_schema": {"type": "object"},
        "cache_control": {"type": "ephemeral"},
    }


async def test_tool_use_round_trip(
    fake_anthropic: FakeAnthropicServer, model: AnthropicModel
) -> None:
    call_id = fake_anthropic.reply_tool_use("memory", {"action": "add"}, text="Saving.")
    first = await model.complete(
        ModelRequest(system=SYSTEM, messages=[user("remember tea")], tools=[MEMORY_TOOL])
    )
    assert first.content == "Saving."
    assert first.finish_reason == "tool_calls"
    (call,) = first.tool_calls
    assert (call.id, call.name) == (call_id, "memory")
    assert json.loads(call.arguments) == {"action": "add"}

    fake_anthropic.reply_text("Done.")
    history = [
        user("remember tea"),
        ChatMessage(role="assistant", content=first.content, tool_calls=first.tool_calls),
        ChatMessage(role="tool", content="ok", tool_call_id=call_id),
    ]
    second = await model.complete(
        ModelRequest(system=SYSTEM, messages=history, tools=[MEMORY_TOOL])
    )
    assert second.content == "Done."

    sent = fake_anthropic.requests[1]
    assert sent["tools"] == [
        {
            "name": "memory",
            "description": MEMORY_TOOL.description,
            "input_schema": MEMORY_TOOL.parameters,
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert sent["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Saving."},
            {"type": "tool_use", "id": call_id, "name": "memory", "input": {"action": "add"}},
        ],
    }
    assert sent["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "ok"}],
    }


def test_consecutive_tool_results_share_one_user_message() -> None:
    calls = (ToolCall("a", "memory", "{}"), ToolCall("b", "skills_list", "{}"))
    wire = to_anthropic_messages(
        [
            user("go"),
            ChatMessage(role="assistant", content=None, tool_calls=calls),
            ChatMessage(role="tool", content="one", tool_call_id="a"),
            ChatMessage(role="tool", content="two", tool_call_id="b"),
            user("thanks"),
        ]
    )
    assert [message["role"] for message in wire] == ["user", "assistant", "user", "user"]
    results = wire[2]["content"]
    assert isinstance(results, list)
    assert [block["tool_use_id"] for block in results] == ["a", "b"]


def test_tool_input_keeps_arguments_that_are_not_an_object() -> None:
    assert tool_input(ToolCall("a", "memory", '{"x": 1}')) == {"x": 1}
    assert tool_input(ToolCall("a", "memory", "")) == {}
    assert tool_input(ToolCall("a", "memory", "not json")) == {"arguments": "not json"}
    assert tool_input(ToolCall("a", "memory", "[1, 2]")) == {"arguments": [1, 2]}


async def test_429_carries_retry_after(
    fake_anthropic: FakeAnthropicServer, model: AnthropicModel
) -> None:
    fake_anthropic.fail(status=429, retry_after=3)
    with pytest.raises(RateLimited) as caught:
        await model.complete(ModelRequest(system=SYSTEM, messages=[user("hi")]))
    assert caught.value.retry_after == 3
    assert caught.value.provider == "anthropic"


async def test_overloaded_is_provider_unavailable(
    fake_anthropic: FakeAnthropicServer, model: AnthropicModel
) -> None:
    fake_anthropic.fail(status=529)
    with pytest.raises(ProviderUnavailable) as caught:
        await model.complete(ModelRequest(system=SYSTEM, messages=[user("hi")]))
    assert caught.value.status == 529


async def test_400_is_a_request_error(
    fake_anthropic: FakeAnthropicServer, model: AnthropicModel
) -> None:
    fake_anthropic.fail(status=400)
    with pytest.raises(ModelRequestError):
        await model.complete(ModelRequest(system=SYSTEM, messages=[user("hi")]))


async def test_factory_wraps_anthropic_in_retries(fake_anthropic: FakeAnthropicServer) -> None:
    client = build_model_client(config_for(fake_anthropic))
    assert isinstance(client, RetryingModel)
    fake_anthropic.fail(status=500)
    try:
        reply = await client.complete(ModelRequest(system=SYSTEM, messages=[user("hi")]))
    finally:
        await client.aclose()
    assert reply.content == "echo: hi"
    assert len(fake_anthropic.requests) == 2


def test_missing_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicModel(ModelConfig(provider="anthropic", model="claude-test"))


# -- streaming ---------------------------------------------------------------------------


class Deltas:
    """An ``on_text`` sink that keeps what it was given."""

    def __init__(self) -> None:
        self.pieces: list[str] = []

    async def __call__(self, text: str) -> None:
        self.pieces.append(text)


async def test_a_streamed_request_is_the_same_request_and_gives_the_same_reply(
    fake_anthropic: FakeAnthropicServer, model: AnthropicModel
) -> None:
    fake_anthropic.cache_write_tokens = 40
    request = ModelRequest(system=SYSTEM, messages=[user("hi there")], tools=[MEMORY_TOOL])
    whole = await model.complete(request)
    deltas = Deltas()
    streamed = await model.complete(dataclasses.replace(request, on_text=deltas))

    plain_body, streamed_body = fake_anthropic.requests
    assert streamed_body == {**plain_body, "stream": True}  # cache marks included
    assert streamed == whole
    assert (streamed.input_tokens, streamed.output_tokens) == (140, 5)
    assert (streamed.cache_read_tokens, streamed.cache_write_tokens) == (90, 40)
    assert len(deltas.pieces) == 3  # word by word, as generated
    assert "".join(deltas.pieces) == streamed.content == "echo: hi there"


async def test_a_streamed_tool_call_arrives_whole_and_only_text_is_passed_on(
    fake_anthropic: FakeAnthropicServer, model: AnthropicModel
) -> None:
    args = {"action": "add", "content": "likes green tea"}
    call_id = fake_anthropic.reply_tool_use("memory", args, text="Noting that.")
    deltas = Deltas()
    reply = await model.complete(
        ModelRequest(
            system=SYSTEM, messages=[user("remember tea")], tools=[MEMORY_TOOL], on_text=deltas
        )
    )

    assert reply.finish_reason == "tool_calls"
    assert reply.content == "Noting that."
    [call] = reply.tool_calls
    assert (call.id, call.name, json.loads(call.arguments)) == (call_id, "memory", args)
    assert "".join(deltas.pieces) == "Noting that."


async def test_model_stream_streams_without_a_sink(fake_anthropic: FakeAnthropicServer) -> None:
    client = AnthropicModel(dataclasses.replace(config_for(fake_anthropic), stream=True))
    try:
        reply = await client.complete(ModelRequest(system=SYSTEM, messages=[user("hi")]))
    finally:
        await client.aclose()
    assert fake_anthropic.requests[0]["stream"] is True
    assert reply.content == "echo: hi"


async def test_an_error_event_mid_stream_is_the_outage_it_names(
    fake_anthropic: FakeAnthropicServer, model: AnthropicModel
) -> None:
    fake_anthropic.fail_stream(text="Half an ans", error_type="overloaded_error")
    deltas = Deltas()
    with pytest.raises(ProviderUnavailable) as caught:
        await model.complete(ModelRequest(system=SYSTEM, messages=[user("hi")], on_text=deltas))
    assert caught.value.status == 529
    assert "".join(deltas.pieces) == "Half an ans"

    fake_anthropic.fail_stream(error_type="rate_limit_error")
    with pytest.raises(RateLimited):
        await model.complete(ModelRequest(system=SYSTEM, messages=[user("hi")], on_text=deltas))
    fake_anthropic.fail_stream(error_type="invalid_request_error")
    with pytest.raises(ModelRequestError):
        await model.complete(ModelRequest(system=SYSTEM, messages=[user("hi")], on_text=deltas))


async def test_a_stream_that_failed_before_any_text_is_retried_not_one_with_text(
    fake_anthropic: FakeAnthropicServer,
) -> None:
    client = build_model_client(config_for(fake_anthropic))
    try:
        fake_anthropic.fail_stream(text="")
        deltas = Deltas()
        reply = await client.complete(
            ModelRequest(system=SYSTEM, messages=[user("hi")], on_text=deltas)
        )
        assert reply.content == "echo: hi"
        assert "".join(deltas.pieces) == "echo: hi"  # nothing shown twice

        fake_anthropic.fail_stream(text="Some words")
        with pytest.raises(ProviderUnavailable):
            await client.complete(
                ModelRequest(system=SYSTEM, messages=[user("hi")], on_text=Deltas())
            )
    finally:
        await client.aclose()
    assert len(fake_anthropic.requests) == 3  # the second failure was not retried
