"""The openai provider, through the real openai client against the fake server."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator

import pytest

from core.errors import (
    ConfigError,
    ModelRequestError,
    ModelTimeout,
    ProviderUnavailable,
    RateLimited,
)
from core.models.base import (
    ChatMessage,
    ModelClient,
    ModelConfig,
    ModelReply,
    ModelRequest,
    ToolCall,
    ToolSpec,
)
from core.models.factory import build_model_client
from core.models.openai_client import OpenAIChatModel
from core.models.retrying import RetryingModel
from core.retry import RetryPolicy
from tests.fakes.openai_server import FakeOpenAIServer

API_KEY = "sk-test-secret-123"
SYSTEM = "You are chatgate.\n\n  Keep these bytes exactly.  \n"
MEMORY_TOOL = ToolSpec(
    name="memory",
    description="Read and write long-term notes.",
    parameters={"type": "object", "properties": {"action": {"type": "string"}}},
)
FAST_RETRIES = RetryPolicy(attempts=2, base_seconds=0.01, max_seconds=0.05)


def config_for(fake: FakeOpenAIServer, **overrides: object) -> ModelConfig:
    settings: dict[str, object] = {
        "provider": "openai",
        "model": "test-model",
        "base_url": fake.base_url,
        "api_key": API_KEY,
        "timeout_seconds": 5.0,
    }
    settings.update(overrides)
    return ModelConfig(**settings)  # type: ignore[arg-type]


def ask(text: str, *history: ChatMessage, tools: tuple[ToolSpec, ...] = ()) -> ModelRequest:
    messages = (*history, ChatMessage(role="user", content=text))
    return ModelRequest(system=SYSTEM, messages=messages, tools=tools)


@pytest.fixture
async def model(fake_openai: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    client = OpenAIChatModel(config_for(fake_openai))
    yield client
    await client.aclose()


@pytest.fixture
async def streaming_model(fake_openai: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    client = OpenAIChatModel(config_for(fake_openai, stream=True))
    yield client
    await client.aclose()


async def test_the_proxy_named_in_the_environment_carries_every_request(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The model's host does not resolve: only the proxy (the fake, which answers
    # absolute-form requests like any proxy) can reach it.
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", fake_openai.base_url.removesuffix("/v1"))
    fake_openai.reply_text("through the proxy")
    fake_openai.reply_text("and again")
    client = OpenAIChatModel(config_for(fake_openai, base_url="http://model.invalid/v1"))
    try:
        first = await client.complete(ask("hi"))
        second = await client.complete(ask("once more"))
    finally:
        await client.aclose()

    assert (first.content, second.content) == ("through the proxy", "and again")
    assert len(fake_openai.requests) == 2


async def test_a_host_in_no_proxy_is_reached_directly(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    fake_openai.reply_text("direct")
    client = OpenAIChatModel(config_for(fake_openai))
    try:
        reply = await client.complete(ask("hi"))
    finally:
        await client.aclose()

    assert reply.content == "direct"


# -- plain replies and request encoding --------------------------------------------


async def test_text_reply(fake_openai: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    fake_openai.reply_text("Hello there, friend")
    reply = await model.complete(ask("hi"))
    assert reply.content == "Hello there, friend"
    assert reply.tool_calls == ()
    assert reply.finish_reason == "stop"
    assert reply.model == "test-model"
    assert reply.output_tokens == 3
    assert reply.input_tokens > 0


async def test_system_prompt_goes_first_byte_for_byte(
    fake_openai: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    await model.complete(ask("hi"))
    sent = fake_openai.requests[0]
    assert sent["messages"][0] == {"role": "system", "content": SYSTEM}
    assert sent["messages"][1] == {"role": "user", "content": "hi"}
    assert sent["model"] == "test-model"
    assert "tools" not in sent
    assert "stream" not in sent or sent["stream"] is False


async def test_cached_prompt_tokens_are_parsed(
    fake_openai: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    fake_openai.cache_read_tokens = 1024
    reply = await model.complete(ask("hi"))
    assert (reply.cache_read_tokens, reply.cache_write_tokens) == (1024, 0)


async def test_usage_without_details_reads_no_cache(model: OpenAIChatModel) -> None:
    reply = await model.complete(ask("hi"))
    assert (reply.cache_read_tokens, reply.cache_write_tokens) == (0, 0)


async def test_empty_script_echoes(model: OpenAIChatModel) -> None:
    reply = await model.complete(ask("ping"))
    assert reply.content == "echo: ping"


# -- tool calls ---------------------------------------------------------------------


async def test_tool_call_round_trip(fake_openai: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    fake_openai.reply_tool_call("memory", {"action": "add", "content": "likes tea"}, call_id="c1")
    first = await model.complete(ask("remember I like tea", tools=(MEMORY_TOOL,)))
    assert first.finish_reason == "tool_calls"
    assert first.content is None
    (call,) = first.tool_calls
    assert (call.id, call.name) == ("c1", "memory")
    assert json.loads(call.arguments) == {"action": "add", "content": "likes tea"}

    fake_openai.reply_text("Noted.")
    history = (
        ChatMessage(role="user", content="remember I like tea"),
        ChatMessage(role="assistant", content=None, tool_calls=first.tool_calls),
        ChatMessage(role="tool", content='{"ok": true}', tool_call_id="c1"),
    )
    second = await model.complete(
        ModelRequest(system=SYSTEM, messages=history, tools=(MEMORY_TOOL,))
    )
    assert second.content == "Noted."

    sent = fake_openai.requests[1]
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "memory",
                "description": MEMORY_TOOL.description,
                "parameters": MEMORY_TOOL.parameters,
            },
        }
    ]
    assistant, tool_result = sent["messages"][2], sent["messages"][3]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "memory", "arguments": call.arguments},
        }
    ]
    assert tool_result == {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'}


async def test_user_name_is_made_wire_safe(
    fake_openai: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    await model.complete(
        ModelRequest(system="", messages=[ChatMessage(role="user", content="x", name="Ana María")])
    )
    (user,) = fake_openai.requests[0]["messages"]
    assert user == {"role": "user", "content": "x", "name": "Ana_Mar_a"}


# -- streaming ----------------------------------------------------------------------


async def test_streaming_text_passes_deltas_and_aggregates(
    fake_openai: FakeOpenAIServer, streaming_model: OpenAIChatModel
) -> None:
    fake_openai.reply_text("one two three four")
    deltas: list[str] = []

    async def on_text(delta: str) -> None:
        deltas.append(delta)

    request = ModelRequest(
        system=SYSTEM, messages=[ChatMessage(role="user", content="count")], on_text=on_text
    )
    reply = await streaming_model.complete(request)
    assert len(deltas) == 4
    assert "".join(deltas) == reply.content == "one two three four"
    assert reply.finish_reason == "stop"
    assert reply.output_tokens == 4
    assert reply.input_tokens > 0
    sent = fake_openai.requests[0]
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}


async def test_streaming_usage_chunk_carries_cached_tokens(
    fake_openai: FakeOpenAIServer, streaming_model: OpenAIChatModel
) -> None:
    fake_openai.cache_read_tokens = 2048
    reply = await streaming_model.complete(ask("hi"))
    assert reply.cache_read_tokens == 2048
    assert reply.input_tokens > 0


async def test_streaming_tool_call_deltas_are_joined_by_index(
    fake_openai: FakeOpenAIServer, streaming_model: OpenAIChatModel
) -> None:
    fake_openai.reply_tool_calls(
        [("memory", {"action": "add", "content": "a"}), ("skills_list", {})],
        text="Let me check.",
        call_ids=["c1", "c2"],
    )
    reply = await streaming_model.complete(ask("go", tools=(MEMORY_TOOL,)))
    assert reply.content == "Let me check."
    assert reply.finish_reason == "tool_calls"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("c1", "memory", {"action": "add", "content": "a"}),
        ("c2", "skills_list", {}),
    ]


async def test_streaming_without_a_text_sink(
    fake_openai: FakeOpenAIServer, streaming_model: OpenAIChatModel
) -> None:
    reply = await streaming_model.complete(ask("quiet"))
    assert reply.content == "echo: quiet"


async def test_streaming_errors_are_translated_too(
    fake_openai: FakeOpenAIServer, streaming_model: OpenAIChatModel
) -> None:
    fake_openai.fail(status=500)
    with pytest.raises(ProviderUnavailable):
        await streaming_model.complete(ask("hi"))


# -- error translation ----------------------------------------------------------------


@pytest.mark.parametrize("seconds", [0, 7])
async def test_429_carries_retry_after(
    fake_openai: FakeOpenAIServer, model: OpenAIChatModel, seconds: int
) -> None:
    fake_openai.fail(status=429, retry_after=seconds)
    with pytest.raises(RateLimited) as caught:
        await model.complete(ask("hi"))
    assert caught.value.retry_after == seconds
    assert caught.value.status == 429
    assert caught.value.provider == "openai"


async def test_429_without_retry_after(
    fake_openai: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    fake_openai.fail(status=429)
    with pytest.raises(RateLimited) as caught:
        await model.complete(ask("hi"))
    assert caught.value.retry_after is None


async def test_500_is_provider_unavailable(
    fake_openai: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    fake_openai.fail(status=503, retry_after=2)
    with pytest.raises(ProviderUnavailable) as caught:
        await model.complete(ask("hi"))
    assert caught.value.status == 503
    assert caught.value.retry_after == 2


async def test_400_is_a_request_error(
    fake_openai: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    fake_openai.fail(status=400, message="bad tool schema")
    with pytest.raises(ModelRequestError, match="bad tool schema") as caught:
        await model.complete(ask("hi"))
    assert caught.value.status == 400


async def test_hang_is_a_timeout(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.hang(30)
    client = OpenAIChatModel(config_for(fake_openai, timeout_seconds=0.2))
    try:
        with pytest.raises(ModelTimeout):
            await client.complete(ask("hi"))
    finally:
        await client.aclose()


async def test_refused_connection_is_provider_unavailable() -> None:
    async with FakeOpenAIServer() as stopped:
        pass  # the port is closed once the server stops
    client = OpenAIChatModel(config_for(stopped))
    try:
        with pytest.raises(ProviderUnavailable):
            await client.complete(ask("hi"))
    finally:
        await client.aclose()


# -- retries ------------------------------------------------------------------------


@pytest.fixture
async def retrying(fake_openai: FakeOpenAIServer) -> AsyncIterator[RetryingModel]:
    client = RetryingModel(OpenAIChatModel(config_for(fake_openai)), FAST_RETRIES)
    yield client
    await client.aclose()


async def test_retry_after_500_returns_the_success(
    fake_openai: FakeOpenAIServer, retrying: RetryingModel, caplog: pytest.LogCaptureFixture
) -> None:
    fake_openai.fail(status=500)
    fake_openai.reply_text("recovered")
    with caplog.at_level(logging.DEBUG):
        reply = await retrying.complete(ask("hi"))
    assert reply.content == "recovered"
    assert len(fake_openai.requests) == 2
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "provider=openai" in warning.getMessage()
    assert "error=ProviderUnavailable" in warning.getMessage()
    assert API_KEY not in caplog.text


async def test_retry_waits_the_servers_retry_after(
    fake_openai: FakeOpenAIServer, retrying: RetryingModel
) -> None:
    fake_openai.fail(status=429, retry_after=0)
    reply = await retrying.complete(ask("hi"))
    assert reply.content == "echo: hi"


async def test_retries_exhausted_raise_the_last_error(
    fake_openai: FakeOpenAIServer, retrying: RetryingModel
) -> None:
    for _ in range(3):
        fake_openai.fail(status=502)
    fake_openai.reply_text("too late")
    with pytest.raises(ProviderUnavailable):
        await retrying.complete(ask("hi"))
    assert len(fake_openai.requests) == 3  # first try + attempts=2 retries
    assert fake_openai.pending_steps == 1


async def test_request_errors_are_not_retried(
    fake_openai: FakeOpenAIServer, retrying: RetryingModel
) -> None:
    fake_openai.fail(status=401)
    with pytest.raises(ModelRequestError):
        await retrying.complete(ask("hi"))
    assert len(fake_openai.requests) == 1


class HalfStream:
    """A provider that streams a word and then drops the connection."""

    provider = "half"
    model = "half"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        if request.on_text is not None:
            await request.on_text("partial ")
        raise ProviderUnavailable("dropped mid-stream")

    async def aclose(self) -> None:
        pass


async def test_a_stream_that_already_spoke_is_not_retried() -> None:
    inner = HalfStream()
    deltas: list[str] = []

    async def on_text(delta: str) -> None:
        deltas.append(delta)

    client: ModelClient = RetryingModel(inner, FAST_RETRIES)
    request = ModelRequest(system="", messages=[], on_text=on_text)
    with pytest.raises(ProviderUnavailable, match="dropped mid-stream"):
        await client.complete(request)
    assert inner.calls == 1
    assert deltas == ["partial "]


class SilentThenSpeaking:
    """A provider whose first call fails before any text, and whose second answers."""

    provider = "late"
    model = "late"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        if self.calls == 1:
            raise ProviderUnavailable("down before a word")
        assert request.on_text is not None
        await request.on_text("whole answer")
        return ModelReply(content="whole answer")

    async def aclose(self) -> None:
        pass


async def test_a_stream_that_failed_before_speaking_is_retried() -> None:
    inner = SilentThenSpeaking()
    deltas: list[str] = []

    async def on_text(delta: str) -> None:
        deltas.append(delta)

    client: ModelClient = RetryingModel(inner, FAST_RETRIES)
    reply = await client.complete(ModelRequest(system="", messages=[], on_text=on_text))
    assert (inner.calls, reply.content, deltas) == (2, "whole answer", ["whole answer"])


async def test_a_hung_provider_costs_one_call_timeout_not_every_retry(
    fake_openai: FakeOpenAIServer,
) -> None:
    # Each try times out after 0.6 s; four tries would keep the person ~2.4 s.
    for _ in range(4):
        fake_openai.hang(30)
    cfg = config_for(
        fake_openai,
        timeout_seconds=0.6,
        max_retries=3,
        retry_base_seconds=0.01,
        call_timeout_seconds=1.0,
    )
    client = build_model_client(cfg)
    started = time.monotonic()
    try:
        with pytest.raises(ModelTimeout, match=r"no answer within 1 s, retries included"):
            await client.complete(ask("hi"))
    finally:
        await client.aclose()
    elapsed = time.monotonic() - started
    assert 1.0 <= elapsed < 1.8
    assert len(fake_openai.requests) == 2  # the second try was cut short by the bound


# -- configuration --------------------------------------------------------------------


async def test_factory_wraps_openai_in_retries(fake_openai: FakeOpenAIServer) -> None:
    client = build_model_client(config_for(fake_openai, retry_base_seconds=0.01))
    assert isinstance(client, RetryingModel)
    assert (client.provider, client.model) == ("openai", "test-model")
    fake_openai.fail(status=500)
    try:
        assert (await client.complete(ask("hi"))).content == "echo: hi"
    finally:
        await client.aclose()


def test_missing_model_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="CHATGATE_MODEL"):
        OpenAIChatModel(ModelConfig(provider="openai", api_key="k"))


def test_missing_key_without_base_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIChatModel(ModelConfig(provider="openai", model="m"))


def test_config_repr_hides_the_key() -> None:
    assert API_KEY not in repr(ModelConfig(provider="openai", model="m", api_key=API_KEY))


async def test_local_server_needs_no_key(fake_openai: FakeOpenAIServer) -> None:
    client = OpenAIChatModel(config_for(fake_openai, api_key=None))
    try:
        assert (await client.complete(ask("hi"))).content == "echo: hi"
    finally:
        await client.aclose()


def test_tool_message_without_id_is_a_bug() -> None:
    from core.models.openai_client import to_openai_messages

    with pytest.raises(ValueError, match="tool_call_id"):
        to_openai_messages("", [ChatMessage(role="tool", content="x")])


def test_assistant_history_keeps_text_with_tool_calls() -> None:
    from core.models.openai_client import to_openai_messages

    call = ToolCall(id="c9", name="memory", arguments="{}")
    (wire,) = to_openai_messages("", [ChatMessage("assistant", "Checking.", (call,))])
    assert wire["role"] == "assistant"
    assert wire.get("content") == "Checking."
