"""Anthropic Messages bodies, assembled from each message's kept bytes.

The body is byte for byte what the SDK sent for the same request: ``max_tokens``,
``messages``, ``model``, ``system``, ``tools``, then ``stream`` (the SDK's key order,
``json.dumps`` with ``ensure_ascii=False`` and compact separators), with the
``cache_control`` marks where ``core.models.anthropic_client`` explains. Each message is
encoded once (``core.models.wire``): a user or assistant message as a whole message, a
tool result as its ``tool_result`` block, since a run of them is sent as one user
message; only the joining of those runs is done per request.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, cast

import orjson

from core.models.base import ChatMessage, RequestWire, ToolCall, ToolSpec
from core.models.image_data import NO_IMAGES, LoadedImages
from core.models.wire import Encoder, dumps, dumps_text

if TYPE_CHECKING:  # the SDK's typed dicts, for the checker only: importing it is slow
    from anthropic.types import (
        Base64ImageSourceParam,
        ImageBlockParam,
        MessageParam,
        TextBlockParam,
        ToolParam,
        ToolResultBlockParam,
        ToolUseBlockParam,
    )

DIALECT = "anthropic"
# The image types Anthropic takes (``core.media.images`` sends only these).
ImageMediaType = Literal["image/jpeg", "image/png", "image/gif", "image/webp"]


def system_blocks(system: str) -> list[TextBlockParam]:
    """The system prompt as one cacheable text block (none when it is empty)."""
    if not system:
        return []
    return [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[ToolParam]:
    """Tool specs in Anthropic's shape (``input_schema`` holds the JSON schema).

    The last tool carries a ``cache_control`` mark, so the tool list is cached too.
    """
    wire: list[ToolParam] = [
        {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
        for tool in tools
    ]
    if wire:
        wire[-1]["cache_control"] = {"type": "ephemeral"}
    return wire


def to_anthropic_messages(
    messages: Sequence[ChatMessage], images: LoadedImages = NO_IMAGES
) -> list[MessageParam]:
    """Chat messages as Anthropic messages, merging runs of tool results (a user
    message's images as image blocks, from ``images``)."""
    wire: list[MessageParam] = []
    results: list[ToolResultBlockParam] = []
    for message in messages:
        if message.role == "tool":
            results.append(_tool_result(message))
            continue
        if results:
            wire.append({"role": "user", "content": results})
            results = []
        converted = _to_anthropic_message(message, images)
        if converted is not None:
            wire.append(converted)
    if results:
        wire.append({"role": "user", "content": results})
    return wire


def _tool_result(message: ChatMessage) -> ToolResultBlockParam:
    if message.tool_call_id is None:
        raise ValueError("a tool message needs the tool_call_id it answers")
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": message.content or "",
    }


def _to_anthropic_message(message: ChatMessage, images: LoadedImages) -> MessageParam | None:
    if message.role == "user":
        return {"role": "user", "content": user_blocks(message, images)}
    blocks: list[TextBlockParam | ToolUseBlockParam] = []
    # The API rejects empty text blocks, so an assistant turn that only called
    # tools carries just its tool_use blocks.
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(_tool_use(call) for call in message.tool_calls)
    if not blocks:
        return None
    return {"role": "assistant", "content": blocks}


def user_blocks(
    message: ChatMessage, images: LoadedImages
) -> str | list[ImageBlockParam | TextBlockParam]:
    """A user message's content: its images as base64 image blocks, then its text (the
    order Anthropic recommends). An image that cannot be sent is a line of text instead;
    with none sent the content stays plain text."""
    text = message.content or ""
    blocks: list[ImageBlockParam | TextBlockParam] = []
    for ref in message.images:
        encoded = images.base64(ref)
        if encoded is None:
            text = f"{text}\n{images.placeholder(ref)}" if text else images.placeholder(ref)
            continue
        source: Base64ImageSourceParam = {
            "type": "base64",
            "media_type": cast(ImageMediaType, ref.mime),
            "data": encoded,
        }
        blocks.append({"type": "image", "source": source})
    if not blocks:
        return text
    # The API refuses an empty text block: a message of images alone has none.
    return [*blocks, {"type": "text", "text": text}] if text else blocks


def _tool_use(call: ToolCall) -> ToolUseBlockParam:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(call)}


def tool_input(call: ToolCall) -> dict[str, object]:
    """A tool call's JSON arguments as the object Anthropic wants.

    History written by another provider may hold arguments that are not a JSON
    object; they are kept under ``"arguments"`` rather than dropped.
    """
    try:
        parsed = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return {"arguments": call.arguments}
    if isinstance(parsed, dict):
        return cast(dict[str, object], parsed)
    return {"arguments": parsed}


def encoder(images: LoadedImages) -> Encoder:
    """``encode(message)`` for ``WireCache.parts``: a message with images is not kept;
    an assistant message with nothing to send is empty bytes (it is left out)."""

    def encode(message: ChatMessage) -> tuple[bytes, bool]:
        if message.role == "tool":
            return orjson.dumps(_tool_result(message)), True
        converted = _to_anthropic_message(message, images)
        if converted is None:
            return b"", True
        # Tool inputs are arbitrary JSON: the SDK's encoder, for the same float digits.
        data = dumps(converted) if message.tool_calls else orjson.dumps(converted)
        return data, not message.images

    return encode


def _joined(messages: Sequence[ChatMessage], parts: Sequence[bytes]) -> bytes:
    """The ``messages`` array: each run of tool results joined into one user message."""
    out: list[bytes] = []
    results: list[bytes] = []
    for message, part in zip(messages, parts, strict=True):
        if message.role == "tool":
            results.append(part)
            continue
        if results:
            out.append(b'{"role":"user","content":[' + b",".join(results) + b"]}")
            results = []
        if part:
            out.append(part)
    if results:
        out.append(b'{"role":"user","content":[' + b",".join(results) + b"]}")
    return b"[" + b",".join(out) + b"]"


def _tools(specs: Sequence[ToolSpec]) -> bytes:
    return dumps(to_anthropic_tools(specs))


def anthropic_body(
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
    chunks = [
        b'{"max_tokens":',
        str(max_tokens).encode(),
        b',"messages":',
        _joined(messages, parts),
        b',"model":',
        dumps_text(model),
    ]
    if system:
        chunks += [b',"system":', orjson.dumps(system_blocks(system))]
    if tools:
        chunks += [b',"tools":', wire.tools(DIALECT, tools, _tools)]
    if stream:
        chunks.append(b',"stream":true')
    chunks.append(b"}")
    return b"".join(chunks)
