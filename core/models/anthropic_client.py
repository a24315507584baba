"""The ``anthropic`` provider: the Messages API, with the system prompt cached.

The system prompt goes out as one text block marked ``cache_control: ephemeral``,
and so does the last tool. Anthropic caches the prefix up to each mark (tools, then
system), and chatgate's system prompt is a frozen per-session snapshot, so every
turn after the first reads that prefix from the cache. The tool mark keeps the tool
list cached on its own, in case the system prompt changes (a new session).
The response's cache read/write counts are reported on the reply.

Conversions: tool calls become ``tool_use`` blocks on the assistant message; tool
results become ``tool_result`` blocks, and consecutive results are merged into one
user message as the API expects. Stop reasons are reported in the OpenAI vocabulary
(``stop``, ``tool_calls``, ``length``) so callers see one set of words.

Streaming (when the request has an ``on_text``, or ``model.stream`` is true) goes
through the SDK's streaming API with the same request, and each text delta is passed
to ``on_text``; the SDK folds the events into the same message, so the reply (text,
tool calls, stop reason, token counts) is what the plain request would have given.

Errors map like the openai provider's: 429 -> RateLimited(retry_after), 5xx and
connection failures -> ProviderUnavailable, timeouts and 408 -> ModelTimeout, other
4xx -> ModelRequestError. An ``error`` event inside a stream (the response itself was a
200) maps as the status its error type stands for (``overloaded_error`` as 529,
``rate_limit_error`` as 429...). The SDK's retries are off; ``core.models.retrying``
retries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal, cast

import anthropic
from anthropic.types import (
    Base64ImageSourceParam,
    ImageBlockParam,
    Message,
    MessageParam,
    TextBlock,
    TextBlockParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlock,
    ToolUseBlockParam,
)

from core.errors import (
    ConfigError,
    ModelError,
    ModelTimeout,
    ProviderUnavailable,
)
from core.models.base import (
    ChatMessage,
    ModelConfig,
    ModelReply,
    ModelRequest,
    TextSink,
    ToolCall,
    ToolSpec,
)
from core.models.image_data import NO_IMAGES, ImageData, LoadedImages
from core.models.status import status_error

PROVIDER = "anthropic"
# The image types Anthropic takes (``core.media.images`` sends only these).
ImageMediaType = Literal["image/jpeg", "image/png", "image/gif", "image/webp"]

_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}

# The HTTP status an error type stands for, for an ``error`` event inside a stream.
_STREAM_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


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


def reply_from_message(message: Message) -> ModelReply:
    """A ``ModelReply`` from an Anthropic message."""
    texts = [block.text for block in message.content if isinstance(block, TextBlock)]
    calls = tuple(
        ToolCall(id=block.id, name=block.name, arguments=json.dumps(block.input))
        for block in message.content
        if isinstance(block, ToolUseBlock)
    )
    usage = message.usage
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    stop = message.stop_reason
    return ModelReply(
        content="".join(texts) if texts else None,
        tool_calls=calls,
        finish_reason=_FINISH_REASONS.get(stop, stop) if stop else None,
        # input_tokens excludes cached tokens; the neutral count is the whole prompt.
        input_tokens=usage.input_tokens + cache_read + cache_write,
        output_tokens=usage.output_tokens,
        model=str(message.model),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def translate_error(exc: anthropic.AnthropicError) -> ModelError:
    """The ``core.errors`` exception for an SDK error (see the module docstring)."""
    if isinstance(exc, anthropic.APITimeoutError):
        return ModelTimeout("anthropic: the request timed out", provider=PROVIDER)
    if isinstance(exc, anthropic.APIConnectionError):
        return ProviderUnavailable(f"anthropic: {exc.message}", provider=PROVIDER)
    if isinstance(exc, anthropic.APIStatusError):
        return _status_error(exc)
    return ModelError(f"anthropic: {type(exc).__name__}: {exc}", provider=PROVIDER)


def _status_error(exc: anthropic.APIStatusError) -> ModelError:
    status = exc.status_code
    if status < 400:  # an error event in a stream that had started well
        status = _STREAM_ERROR_STATUS.get(exc.type or "", 500)
    return status_error(PROVIDER, status, exc.api_message or exc.message, exc.response.headers)


class AnthropicModel:
    """A ``ModelClient`` for Anthropic's Messages API (streamed: the module docstring)."""

    def __init__(self, config: ModelConfig) -> None:
        if not config.api_key:
            raise ConfigError("model.anthropic_api_key", "set ANTHROPIC_API_KEY")
        if not config.model:
            raise ConfigError("model.name", "set CHATGATE_MODEL to a Claude model name")
        self._config = config
        self._client = anthropic.AsyncAnthropic(
            api_key=config.api_key,
            base_url=config.base_url,
            timeout=config.timeout_seconds,
            max_retries=0,
        )
        self._images = ImageData(config.media_dir, vision=config.vision)

    @property
    def provider(self) -> str:
        return PROVIDER

    @property
    def model(self) -> str:
        return self._config.model

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Send one request; raise a ``core.errors.ModelError`` on failure."""
        system = system_blocks(request.system)
        tools = to_anthropic_tools(request.tools)
        messages = to_anthropic_messages(
            request.messages, await self._images.load(request.messages)
        )
        try:
            if self._config.stream or request.on_text is not None:
                message = await self._streamed(system, messages, tools, request.on_text)
            else:
                message = await self._client.messages.create(
                    model=self._config.model,
                    max_tokens=self._config.max_tokens,
                    system=system or anthropic.omit,
                    messages=messages,
                    tools=tools or anthropic.omit,
                )
        except anthropic.AnthropicError as exc:
            raise translate_error(exc) from exc
        return reply_from_message(message)

    async def _streamed(
        self,
        system: list[TextBlockParam],
        messages: list[MessageParam],
        tools: list[ToolParam],
        on_text: TextSink | None,
    ) -> Message:
        """The same request through the SDK's streaming API: each text delta goes to
        ``on_text``, and the message the SDK assembles from the events is returned."""
        async with self._client.messages.stream(
            model=self._config.model,
            max_tokens=self._config.max_tokens,
            system=system or anthropic.omit,
            messages=messages,
            tools=tools or anthropic.omit,
        ) as stream:
            async for text in stream.text_stream:
                if on_text is not None and text:
                    await on_text(text)
            return await stream.get_final_message()

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()
