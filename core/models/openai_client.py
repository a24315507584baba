"""The ``openai`` provider: chat completions on any OpenAI-compatible server.

OpenAI, OpenRouter, vLLM, Ollama and llama.cpp all speak this API, so one client
covers them; ``base_url`` picks the server. The SDK's own retries are disabled
(``max_retries=0``) because ``core.models.retrying`` owns the one retry policy.

SDK errors become ``core.errors`` types here and nowhere else:

    RateLimitError (429)                      -> RateLimited(retry_after)
    APIStatusError 5xx, APIConnectionError    -> ProviderUnavailable(retry_after)
    APITimeoutError, 408                      -> ModelTimeout
    other APIStatusError (4xx)                -> ModelRequestError
    error event inside a stream               -> ProviderUnavailable
    a response the SDK could not parse        -> ModelError
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionContentPartParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
    ChatCompletionToolUnionParam,
    ChatCompletionUserMessageParam,
)
from openai.types.completion_usage import CompletionUsage

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

PROVIDER = "openai"

# Local servers (Ollama, llama.cpp, vLLM) ignore the key but the SDK insists on one.
LOCAL_SERVER_KEY = "not-needed"

# OpenAI accepts only this alphabet in ``name``; anything else is a 400.
_NAME_FORBIDDEN = re.compile(r"[^A-Za-z0-9_-]")


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


def reply_from_completion(completion: ChatCompletion) -> ModelReply:
    """A ``ModelReply`` from a non-streamed completion."""
    if not completion.choices:
        raise ProviderUnavailable("openai: the reply had no choices", provider=PROVIDER)
    choice = completion.choices[0]
    calls = tuple(
        ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments)
        for call in choice.message.tool_calls or ()
        # We only declare function tools; a custom tool call cannot be ours.
        if isinstance(call, ChatCompletionMessageFunctionToolCall)
    )
    usage = completion.usage
    return ModelReply(
        content=choice.message.content,
        tool_calls=calls,
        finish_reason=choice.finish_reason,
        input_tokens=usage.prompt_tokens if usage else 0,
        output_tokens=usage.completion_tokens if usage else 0,
        model=completion.model,
        cache_read_tokens=cached_tokens(usage),
    )


def cached_tokens(usage: CompletionUsage | None) -> int:
    """Prompt tokens the server read from its prefix cache (0 when it does not say).

    OpenAI caches automatically and reports no separate write count.
    """
    details = usage.prompt_tokens_details if usage else None
    return (details.cached_tokens or 0) if details else 0


class _PartialToolCall:
    """A tool call assembled from stream deltas that share one ``index``."""

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []

    def finish(self) -> ToolCall:
        return ToolCall(id=self.id, name=self.name, arguments="".join(self.arguments))


class StreamAccumulator:
    """Folds streamed chunks into one ``ModelReply``."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, _PartialToolCall] = {}
        self._finish_reason: str | None = None
        self._input_tokens = 0
        self._output_tokens = 0
        self._cache_read_tokens = 0
        self._model = ""

    def add(self, chunk: ChatCompletionChunk) -> str | None:
        """Take one chunk; return its text delta, if it carried one."""
        self._model = chunk.model or self._model
        if chunk.usage is not None:
            self._input_tokens = chunk.usage.prompt_tokens
            self._output_tokens = chunk.usage.completion_tokens
            self._cache_read_tokens = cached_tokens(chunk.usage)
        if not chunk.choices:
            return None
        choice = chunk.choices[0]
        self._finish_reason = choice.finish_reason or self._finish_reason
        for delta in choice.delta.tool_calls or ():
            partial = self._calls.setdefault(delta.index, _PartialToolCall())
            partial.id = delta.id or partial.id
            if delta.function is not None:
                partial.name += delta.function.name or ""
                partial.arguments.append(delta.function.arguments or "")
        text = choice.delta.content
        if text:
            self._text.append(text)
        return text or None

    def reply(self) -> ModelReply:
        """The assembled reply; content is None when no text arrived."""
        return ModelReply(
            content="".join(self._text) if self._text else None,
            tool_calls=tuple(self._calls[index].finish() for index in sorted(self._calls)),
            finish_reason=self._finish_reason,
            input_tokens=self._input_tokens,
            output_tokens=self._output_tokens,
            model=self._model,
            cache_read_tokens=self._cache_read_tokens,
        )


def translate_error(exc: openai.OpenAIError) -> ModelError:
    """The ``core.errors`` exception for an SDK error (see the module docstring)."""
    if isinstance(exc, openai.APITimeoutError):
        return ModelTimeout("openai: the request timed out", provider=PROVIDER)
    if isinstance(exc, openai.APIConnectionError):
        return ProviderUnavailable(f"openai: {exc.message}", provider=PROVIDER)
    if isinstance(exc, openai.APIStatusError):
        return _status_error(exc)
    if isinstance(exc, openai.APIError) and not isinstance(exc, openai.APIResponseValidationError):
        return ProviderUnavailable(f"openai: stream error: {exc.message}", provider=PROVIDER)
    return ModelError(f"openai: {type(exc).__name__}: {exc}", provider=PROVIDER)


def _status_error(exc: openai.APIStatusError) -> ModelError:
    return status_error(PROVIDER, exc.status_code, exc.message, exc.response.headers)


def _client_for(config: ModelConfig) -> openai.AsyncOpenAI:
    api_key = config.api_key
    if not api_key:
        if config.base_url is None:
            raise ConfigError(
                "model.api_key",
                "set OPENAI_API_KEY (or OPENAI_BASE_URL for a local server that needs no key)",
            )
        api_key = LOCAL_SERVER_KEY
    return openai.AsyncOpenAI(
        api_key=api_key,
        base_url=config.base_url,
        timeout=config.timeout_seconds,
        max_retries=0,
    )


class OpenAIChatModel:
    """A ``ModelClient`` for OpenAI-compatible chat completions.

    Streams when ``config.stream`` is true or the request has an ``on_text`` (a reply
    shown as it is generated), passing each text delta to ``request.on_text``; the
    returned reply is the same either way.
    """

    def __init__(self, config: ModelConfig) -> None:
        if not config.model:
            raise ConfigError("model.name", "set CHATGATE_MODEL to the model's name")
        self._config = config
        self._client = _client_for(config)
        self._images = ImageData(config.media_dir, vision=config.vision)

    @property
    def provider(self) -> str:
        return PROVIDER

    @property
    def model(self) -> str:
        return self._config.model

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Send one request; raise a ``core.errors.ModelError`` on failure."""
        images = await self._images.load(request.messages)
        try:
            if self._config.stream or request.on_text is not None:
                return await self._streamed(request, images)
            return await self._single(request, images)
        except openai.OpenAIError as exc:
            raise translate_error(exc) from exc

    def _body(self, request: ModelRequest, images: LoadedImages) -> dict[str, Any]:
        """The request body, built as plain JSON-ready dicts.

        It is posted with the client's low-level ``post``: ``chat.completions.create``
        first walks every message through the SDK's typed-dict transform, which cost
        ~10 ms of event-loop time per call at 40 messages (most of a turn's CPU) and
        does nothing for a body that is already plain JSON.
        """
        body: dict[str, Any] = {
            "model": self._config.model,
            "messages": to_openai_messages(request.system, request.messages, images),
            # max_tokens rather than max_completion_tokens: every compatible
            # server understands it.
            "max_tokens": self._config.max_tokens,
        }
        tools = to_openai_tools(request.tools)
        if tools:
            body["tools"] = tools
        return body

    async def _single(self, request: ModelRequest, images: LoadedImages) -> ModelReply:
        completion = await self._client.post(
            "/chat/completions", body=self._body(request, images), cast_to=ChatCompletion
        )
        return reply_from_completion(completion)

    async def _streamed(self, request: ModelRequest, images: LoadedImages) -> ModelReply:
        body = {
            **self._body(request, images),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        stream = await self._client.post(
            "/chat/completions",
            body=body,
            cast_to=ChatCompletion,
            stream=True,
            stream_cls=openai.AsyncStream[ChatCompletionChunk],
        )
        accumulator = StreamAccumulator()
        async with stream:
            async for chunk in stream:
                await _emit(request.on_text, accumulator.add(chunk))
        return accumulator.reply()

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()


async def _emit(sink: TextSink | None, text: str | None) -> None:
    if sink is not None and text:
        await sink(text)
