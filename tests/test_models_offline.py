"""The offline provider: honest, deterministic, instant, tool-free."""

from __future__ import annotations

from core.models.base import ChatMessage, ModelConfig, ModelRequest, ToolCall, ToolSpec
from core.models.factory import build_model_client
from core.models.offline import OfflineModel


def request(*messages: ChatMessage) -> ModelRequest:
    tool = ToolSpec(name="memory", description="notes", parameters={"type": "object"})
    return ModelRequest(system="You are helpful.", messages=messages, tools=[tool])


async def test_says_no_model_is_configured_and_how_to_fix_it() -> None:
    reply = await OfflineModel().complete(request(ChatMessage(role="user", content="hi")))
    assert reply.content is not None
    assert "No model is configured" in reply.content
    for variable in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "CHATGATE_MODEL", "ANTHROPIC_API_KEY"):
        assert variable in reply.content


async def test_echoes_the_last_user_message() -> None:
    conversation = request(
        ChatMessage(role="user", content="first"),
        ChatMessage(role="assistant", content="ok"),
        ChatMessage(role="user", content="second question"),
        ChatMessage(role="tool", content="tool output", tool_call_id="c1"),
    )
    reply = await OfflineModel().complete(conversation)
    assert reply.content is not None
    assert reply.content.endswith('You said: "second question"')


async def test_is_deterministic_and_never_calls_tools() -> None:
    conversation = request(ChatMessage(role="user", content="please use the memory tool"))
    first = await OfflineModel().complete(conversation)
    second = await OfflineModel().complete(conversation)
    assert first == second
    assert first.tool_calls == ()
    assert first.finish_reason == "stop"
    assert first.model == "offline"


async def test_without_user_text_it_still_explains() -> None:
    call = ToolCall(id="c1", name="memory", arguments="{}")
    reply = await OfflineModel().complete(
        request(ChatMessage(role="assistant", content=None, tool_calls=(call,)))
    )
    assert reply.content is not None
    assert "You said" not in reply.content
    assert "No model is configured" in reply.content


async def test_long_messages_are_echoed_in_part() -> None:
    reply = await OfflineModel().complete(request(ChatMessage(role="user", content="x" * 5000)))
    assert reply.content is not None
    assert len(reply.content) < 1500


async def test_factory_returns_it_unwrapped() -> None:
    client = build_model_client(ModelConfig(provider="offline"))
    assert isinstance(client, OfflineModel)
    assert (client.provider, client.model) == ("offline", "offline")
    await client.aclose()
