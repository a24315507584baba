"""Request bodies assembled from each message's kept bytes (``core.models.wire``).

What the provider receives must be, byte for byte, what the SDKs sent before for the
same transcript (the prompt cache keys on those bytes), and a message must be encoded
once per session, not once per turn.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anthropic
import openai
from openai.types.chat import ChatCompletion

from core.media.refs import MediaRef
from core.models.anthropic_client import AnthropicModel
from core.models.anthropic_wire import system_blocks, to_anthropic_messages, to_anthropic_tools
from core.models.base import ChatMessage, ModelConfig, ModelRequest, ToolCall, ToolSpec
from core.models.image_data import NO_IMAGES
from core.models.openai_client import OpenAIChatModel, to_openai_messages, to_openai_tools
from core.models.openai_wire import encoder
from core.models.wire import WireCache
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway

SYSTEM = (
    'You are chatgate.\n\t"Quotes", back\\slash, ünïcødé, 日本語, emoji 🦊, \x01\x1f\x7f\u2028.'
)
TOOLS = (
    ToolSpec(
        name="memory",
        description="Read and write long-term notes — «exactly».",
        parameters={
            "type": "object",
            "properties": {"weight": {"type": "number", "minimum": 1e-07, "maximum": 2.5}},
        },
    ),
    ToolSpec(name="clock", description="The time.", parameters={"type": "object"}),
)


def transcript() -> list[ChatMessage]:
    """A history with every shape a message can take."""
    return [
        ChatMessage(role="user", content='hello\nthere "friend" </script>', name="Ana María"),
        ChatMessage(
            role="assistant",
            content=None,
            tool_calls=(
                ToolCall("c1", "memory", '{"weight": 1e-7, "note": "ü", "n": [1, 2.50]}'),
                ToolCall("c2", "clock", "not json at all"),
            ),
        ),
        ChatMessage(role="tool", content='{"ok": true}', tool_call_id="c1", name="memory"),
        ChatMessage(role="tool", content="12:00 ☀", tool_call_id="c2", name="clock"),
        ChatMessage(role="assistant", content="Saved. It is noon."),
        ChatMessage(role="user", content=""),
        ChatMessage(role="assistant", content="\u0000 odd \ud7ff end"),
    ]


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def openai_config(fake: FakeOpenAIServer, **extra: object) -> ModelConfig:
    return ModelConfig(
        provider="openai",
        model="test-model",
        base_url=fake.base_url,
        api_key="sk-test",
        **extra,  # type: ignore[arg-type]
    )


def anthropic_config(fake: FakeAnthropicServer, **extra: object) -> ModelConfig:
    return ModelConfig(
        provider="anthropic",
        model="claude-test",
        base_url=fake.base_url,
        api_key="sk-ant-test",
        **extra,  # type: ignore[arg-type]
    )


async def sdk_openai_bytes(
    fake: FakeOpenAIServer, messages: Sequence[ChatMessage], *, stream: bool
) -> bytes:
    """What the openai provider sent before: plain dicts posted through the SDK."""
    body: dict[str, object] = {
        "model": "test-model",
        "messages": to_openai_messages(SYSTEM, messages),
        "max_tokens": 4096,
        "tools": to_openai_tools(TOOLS),
    }
    if stream:
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)
    try:
        if stream:
            answer = await client.post(
                "/chat/completions",
                body=body,
                cast_to=ChatCompletion,
                stream=True,
                stream_cls=openai.AsyncStream[object],
            )
            await answer.close()
        else:
            await client.post("/chat/completions", body=body, cast_to=ChatCompletion)
    finally:
        await client.close()
    return fake.raw_requests[-1]


async def test_openai_bodies_are_the_bytes_the_sdk_sent(fake_openai: FakeOpenAIServer) -> None:
    messages = transcript()
    model = OpenAIChatModel(openai_config(fake_openai))
    streaming = OpenAIChatModel(openai_config(fake_openai, stream=True))
    try:
        await model.complete(ModelRequest(SYSTEM, messages, TOOLS, wire=WireCache()))
        ours = fake_openai.raw_requests[-1]
        await streaming.complete(ModelRequest(SYSTEM, messages, TOOLS, wire=WireCache()))
        ours_streamed = fake_openai.raw_requests[-1]
    finally:
        await model.aclose()
        await streaming.aclose()
    assert ours == await sdk_openai_bytes(fake_openai, messages, stream=False)
    assert ours_streamed == await sdk_openai_bytes(fake_openai, messages, stream=True)


async def sdk_anthropic_bytes(
    fake: FakeAnthropicServer, messages: Sequence[ChatMessage], *, stream: bool
) -> bytes:
    """What the anthropic provider sent before: ``messages.create`` / ``.stream``."""
    client = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="sk-ant", max_retries=0)
    request: dict[str, Any] = {
        "model": "claude-test",
        "max_tokens": 4096,
        "system": system_blocks(SYSTEM),
        "messages": to_anthropic_messages(messages),
        "tools": to_anthropic_tools(TOOLS),
    }
    sdk: Any = client.messages  # the request dict is typed per key; the SDK takes it as is
    try:
        if stream:
            async with sdk.stream(**request) as events:
                await events.get_final_message()
        else:
            await sdk.create(**request)
    finally:
        await client.close()
    return fake.raw_requests[-1]


async def test_anthropic_bodies_are_the_bytes_the_sdk_sent_marks_included(
    fake_anthropic: FakeAnthropicServer,
) -> None:
    messages = transcript()
    model = AnthropicModel(anthropic_config(fake_anthropic))
    streaming = AnthropicModel(anthropic_config(fake_anthropic, stream=True))
    try:
        await model.complete(ModelRequest(SYSTEM, messages, TOOLS, wire=WireCache()))
        ours = fake_anthropic.raw_requests[-1]
        await streaming.complete(ModelRequest(SYSTEM, messages, TOOLS, wire=WireCache()))
        ours_streamed = fake_anthropic.raw_requests[-1]
    finally:
        await model.aclose()
        await streaming.aclose()
    assert ours == await sdk_anthropic_bytes(fake_anthropic, messages, stream=False)
    assert ours_streamed == await sdk_anthropic_bytes(fake_anthropic, messages, stream=True)
    sent = json.loads(ours)
    assert sent["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in sent["tools"][0]
    # The two tool results went as one user message, as before.
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]


_NO_IMAGES = NO_IMAGES


class CountingEncoder:
    """The openai encoder, counting the messages it is asked to encode."""

    def __init__(self) -> None:
        self.encoded: list[ChatMessage] = []
        self._encode = encoder(_NO_IMAGES)

    def __call__(self, message: ChatMessage) -> tuple[bytes, bool]:
        self.encoded.append(message)
        return self._encode(message)


def fresh_parts(messages: Sequence[ChatMessage]) -> list[bytes]:
    return WireCache().parts("openai", messages, encoder(_NO_IMAGES))


def test_a_turn_encodes_only_its_new_messages() -> None:
    wire, counting = WireCache(), CountingEncoder()
    history = transcript()
    wire.parts("openai", history, counting)
    grown = [*history, user("next"), ChatMessage(role="assistant", content="ok")]
    parts = wire.parts("openai", grown, counting)
    assert counting.encoded == [*history, *grown[len(history) :]]
    assert parts == fresh_parts(grown)
    assert wire.nbytes >= sum(len(p) for p in parts)


def test_a_replaced_history_is_encoded_afresh_from_where_it_differs() -> None:
    wire, counting = WireCache(), CountingEncoder()
    history = transcript()
    wire.parts("openai", history, counting)
    counting.encoded.clear()
    # An edit: the fifth message replaced by an equal-looking new one, the rest kept.
    edited = [
        *history[:4],
        ChatMessage(role="assistant", content="Saved. It is one."),
        *history[5:],
    ]
    assert wire.parts("openai", edited, counting) == fresh_parts(edited)
    assert counting.encoded == edited[4:]
    # A compaction: a summary first, then the recent messages (the same objects, moved).
    counting.encoded.clear()
    compacted = [user("[Summary] they talked"), *edited[-3:]]
    assert wire.parts("openai", compacted, counting) == fresh_parts(compacted)
    assert counting.encoded == compacted
    before = wire.nbytes
    wire.parts("openai", compacted[:2], counting)  # a shorter history drops the rest
    assert wire.nbytes < before


def test_a_message_with_images_is_encoded_each_time_never_kept() -> None:
    photo = ChatMessage(
        role="user", content="look", images=(MediaRef("ab" * 32, "image/png", "image"),)
    )
    wire, counting = WireCache(), CountingEncoder()
    history = [user("hi"), photo, ChatMessage(role="assistant", content="a cat")]
    first = wire.parts("openai", history, counting)
    asking = user("and now?")
    second = wire.parts("openai", [*history, asking], counting)
    assert counting.encoded == [*history, asking, photo]
    assert first == second[:3] == fresh_parts(history)
    assert b"no longer stored" in first[1]


async def test_a_new_session_sends_none_of_the_old_one(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("first words")
        await gw.say("second words")
        await gw.say("/new")
        await gw.say("a fresh start")
        await gw.say("and more")
    first, second, fresh, more = fake_openai.requests
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assert [m["content"] for m in fresh["messages"][1:]] == ["a fresh start"]
    assert more["messages"][: len(fresh["messages"])] == fresh["messages"]
    assert "first words" not in json.dumps(more)
