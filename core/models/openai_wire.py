"""OpenAI chat-completions bodies, assembled from each message's kept bytes.

The body is byte for byte what the SDK sent for the same request (``json.dumps`` with
``ensure_ascii=False`` and compact separators; orjson writes strings the same way): the
same keys in the same order, ``model``, ``messages``, ``max_tokens``, then ``tools``,
then the stream options. Only the messages the ``WireCache`` has not seen are encoded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import orjson

from core.models.base import ChatMessage, RequestWire, ToolCall, ToolSpec
from core.models.image_data import NO_IMAGES, LoadedImages
from core.models.wire import Encoder, dumps, dumps_text

if TYPE_CHECKING:  # the SDK's typed dicts, for the checker only: importing it is slow
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionContentPartParam,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
        ChatCompletionToolUnionParam,
        ChatCompletionUserMessageParam,
    )

DIALECT = "openai"
# OpenAI accepts only this alphabet in ``name``; anything else is a 400.
_NAME_FORBIDDEN = re.compile(r"[^A-Za-z0-9_-]")
_STREAM_TAIL = b',"stream":true,"stream_options":{"include_usage":true}'


def to_openai_messages(
    system: str, messages: Sequence[ChatMessage], images: LoadedImages = NO_IMAGES
) -> list[ChatCompletionMessageParam]:
    """The wire messages: the system prompt first, exactly as stored, then the chat
    (a user message's images as parts, from ``images``)."""
    wire: list[ChatCompletionMessageParam] = []
    if system:
        wire.append({"role": "system", "content": system})
    wire.extend(_to_openai_message(message, images) for message in messages)
    return wire


def _to_openai_message(message: ChatMessage, images: LoadedImages) -> ChatCompletionMessageParam:
    if message.role == "assistant":
        return _assistant_message(message)
    if message.role == "tool":
        if message.tool_call_id is None:
            raise ValueError("a tool message needs the tool_call_id it answers")
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": message.content or "",
        }
    user: ChatCompletionUserMessageParam = {
        "role": "user",
        "content": user_content(message, images),
    }
    name = _wire_name(message.name)
    if name:
        user["name"] = name
    return user


def user_content(
    message: ChatMessage, images: LoadedImages
) -> str | list[ChatCompletionContentPartParam]:
    """A user message's content: its text, then each image as an ``image_url`` part
    holding a data URL. An image that cannot be sent is a line of text instead; with
    none sent the content stays plain text, which servers without vision accept."""
    text = message.content or ""
    parts: list[ChatCompletionContentPartParam] = []
    for ref in message.images:
        encoded = images.base64(ref)
        if encoded is None:
            text = f"{text}\n{images.placeholder(ref)}" if text else images.placeholder(ref)
        else:
            parts.append(
                {"type": "image_url", "image_url": {"url": f"data:{ref.mime};base64,{encoded}"}}
            )
    if not parts:
        return text
    return [{"type": "text", "text": text}, *parts] if text else parts


def _assistant_message(message: ChatMessage) -> ChatCompletionAssistantMessageParam:
    wire: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [_tool_call_param(call) for call in message.tool_calls]
    return wire


def _tool_call_param(call: ToolCall) -> ChatCompletionMessageFunctionToolCallParam:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def _wire_name(name: str | None) -> str | None:
    if not name:
        return None
    return _NAME_FORBIDDEN.sub("_", name)[:64]


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[ChatCompletionToolUnionParam]:
    """Tool specs as OpenAI function tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }
        for tool in tools
    ]


def encoder(images: LoadedImages) -> Encoder:
    """``encode(message)`` for ``WireCache.parts``: a message with images is not kept."""

    def encode(message: ChatMessage) -> tuple[bytes, bool]:
        return orjson.dumps(_to_openai_message(message, images)), not message.images

    return encode


def _tools(specs: Sequence[ToolSpec]) -> bytes:
    return dumps(to_openai_tools(specs))


def openai_body(
    *,
    model: str,
    system: str,
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpec],
    max_tokens: int,
    stream: bool,
    images: LoadedImages,
    wire: RequestWire,
) -> bytes:
    """The request body (see the module docstring)."""
    parts = wire.parts(DIALECT, messages, encoder(images))
    if system:
        parts.insert(0, b'{"role":"system","content":' + dumps_text(system) + b"}")
    chunks = [
        b'{"model":',
        dumps_text(model),
        b',"messages":[',
        b",".join(parts),
        b'],"max_tokens":',
        str(max_tokens).encode(),
    ]
    if tools:
        chunks += [b',"tools":', wire.tools(DIALECT, tools, _tools)]
    if stream:
        chunks.append(_STREAM_TAIL)
    chunks.append(b"}")
    return b"".join(chunks)
