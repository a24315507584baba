"""The ``openai`` provider: chat completions on any OpenAI-compatible server.

OpenAI, OpenRouter, vLLM, Ollama and llama.cpp all speak this API, so one client
covers them; ``base_url`` picks the server. Requests go through ``ModelHTTP`` (one
keep-alive aiohttp session, bodies pre-encoded by ``core.models.openai_wire``), answers
are parsed with orjson; ``core.models.retrying`` owns the one retry policy.

Failures become ``core.errors`` types, as the SDK's errors did:

    429                                       -> RateLimited(retry_after)
    5xx, connection failures                  -> ProviderUnavailable(retry_after)
    timeouts, 408                             -> ModelTimeout
    other 4xx                                 -> ModelRequestError
    error event inside a stream               -> ProviderUnavailable
    an answer not in the completions shape    -> ModelError

``translate_error`` still maps the SDK's errors, for the audio endpoints
(``core.media.speech``), which go through the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from core.errors import (
    ConfigError,
    ModelError,
    ModelTimeout,
    ProviderUnavailable,
)
from core.models.base import ModelConfig, ModelReply, ModelRequest, TextSink, ToolCall
from core.models.http import SSE, ModelHTTP
from core.models.image_data import ImageData
from core.models.openai_wire import openai_body
from core.models.openai_wire import to_openai_messages as to_openai_messages
from core.models.openai_wire import to_openai_tools as to_openai_tools
from core.models.openai_wire import user_content as user_content
from core.models.status import status_error
from core.models.wire import WireCache

if TYPE_CHECKING:  # the SDK is imported only to translate its errors (audio)
    import openai

PROVIDER = "openai"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
Json = dict[str, Any]

# Local servers (Ollama, llama.cpp, vLLM) ignore the key but the SDK insists on one.
LOCAL_SERVER_KEY = "not-needed"


def reply_from_completion(completion: Json) -> ModelReply:
    """A ``ModelReply`` from a non-streamed completion (its JSON, parsed)."""
    try:
        return _reply(completion)
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ModelError(
            "openai: an answer not in the completions shape", provider=PROVIDER
        ) from exc


def _reply(completion: Json) -> ModelReply:
    choices = completion.get("choices")
    if not choices:
        raise ProviderUnavailable("openai: the reply had no choices", provider=PROVIDER)
    choice = choices[0]
    message = choice["message"]
    calls = tuple(
        ToolCall(
            id=call["id"], name=call["function"]["name"], arguments=call["function"]["arguments"]
        )
        for call in message.get("tool_calls") or ()
        # We only declare function tools; a custom tool call cannot be ours.
        if call.get("type", "function") == "function"
    )
    usage = completion.get("usage")
    return ModelReply(
        content=message.get("content"),
        tool_calls=calls,
        finish_reason=choice.get("finish_reason"),
        input_tokens=usage.get("prompt_tokens") or 0 if usage else 0,
        output_tokens=usage.get("completion_tokens") or 0 if usage else 0,
        model=completion.get("model") or "",
        cache_read_tokens=cached_tokens(usage),
    )


def cached_tokens(usage: Json | None) -> int:
    """Prompt tokens the server read from its prefix cache (0 when it does not say).

    OpenAI caches automatically and reports no separate write count.
    """
    details = usage.get("prompt_tokens_details") if usage else None
    return (details.get("cached_tokens") or 0) if details else 0


class _PartialToolCall:
    """A tool call assembled from stream deltas that share one ``index``."""

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []

    def finish(self) -> ToolCall:
        return ToolCall(id=self.id, name=self.name, arguments="".join(self.arguments))


class StreamAccumulator:
    """Folds streamed chunks (their JSON, parsed) into one ``ModelReply``."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, _PartialToolCall] = {}
        self._finish_reason: str | None = None
        self._input_tokens = 0
        self._output_tokens = 0
        self._cache_read_tokens = 0
        self._model = ""

    def add(self, chunk: Json) -> str | None:
        """Take one chunk; return its text delta, if it carried one."""
        self._model = chunk.get("model") or self._model
        usage = chunk.get("usage")
        if usage:
            self._input_tokens = usage.get("prompt_tokens") or 0
            self._output_tokens = usage.get("completion_tokens") or 0
            self._cache_read_tokens = cached_tokens(usage)
        choices = chunk.get("choices")
        if not choices:
            return None
        choice = choices[0]
        self._finish_reason = choice.get("finish_reason") or self._finish_reason
        delta = choice.get("delta") or {}
        for call in delta.get("tool_calls") or ():
            partial = self._calls.setdefault(call["index"], _PartialToolCall())
            partial.id = call.get("id") or partial.id
            function = call.get("function")
            if function:
                partial.name += function.get("name") or ""
                partial.arguments.append(function.get("arguments") or "")
        text: str | None = delta.get("content")
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
    import openai  # loaded already: the caller used the SDK

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


def _api_key(config: ModelConfig) -> str:
    if config.api_key:
        return config.api_key
    if config.base_url is None:
        raise ConfigError(
            "model.api_key",
            "set OPENAI_API_KEY (or OPENAI_BASE_URL for a local server that needs no key)",
        )
    return LOCAL_SERVER_KEY


class OpenAIChatModel:
    """A ``ModelClient`` for OpenAI-compatible chat completions.

    Streams when ``config.stream`` is true or the request has an ``on_text`` (a reply
    shown as it is generated), passing each text delta to ``request.on_text``; the
    returned reply is the same either way. Bodies are assembled from the session's
    ``WireCache`` (``core.models.openai_wire``) and sent through ``ModelHTTP``.
    """

    def __init__(self, config: ModelConfig) -> None:
        if not config.model:
            raise ConfigError("model.name", "set CHATGATE_MODEL to the model's name")
        self._config = config
        auth = {"authorization": f"Bearer {_api_key(config)}"}
        self._http = ModelHTTP(PROVIDER, auth, config.timeout_seconds)
        self._url = (config.base_url or DEFAULT_BASE_URL).rstrip("/") + "/chat/completions"
        self._images = ImageData(config.media_dir, vision=config.vision)

    @property
    def provider(self) -> str:
        return PROVIDER

    @property
    def model(self) -> str:
        return self._config.model

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Send one request; raise a ``core.errors.ModelError`` on failure."""
        stream = self._config.stream or request.on_text is not None
        body = openai_body(
            model=self._config.model,
            system=request.system,
            messages=request.messages,
            tools=request.tools,
            max_tokens=self._config.max_tokens,
            stream=stream,
            images=await self._images.load(request.messages),
            wire=request.wire if request.wire is not None else WireCache(),
        )
        if stream:
            return await self._streamed(body, request.on_text)
        return reply_from_completion(await self._http.post(self._url, body))

    async def _streamed(self, body: bytes, on_text: TextSink | None) -> ModelReply:
        accumulator = StreamAccumulator()
        async for sse in self._http.events(self._url, body):
            if sse.data.startswith("[DONE]"):
                break
            chunk = _chunk(sse)
            await _emit(on_text, accumulator.add(chunk))
        return accumulator.reply()

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._http.aclose()


def _chunk(sse: SSE) -> Json:
    """One streamed chunk; an error event (or an ``error`` in the data) is an outage."""
    try:
        chunk = orjson.loads(sse.data)
    except orjson.JSONDecodeError as exc:
        raise ModelError("openai: a stream chunk was not JSON", provider=PROVIDER) from exc
    if not isinstance(chunk, dict):
        raise ModelError("openai: a stream chunk was not an object", provider=PROVIDER)
    error = chunk.get("error")
    if sse.event == "error" or error:
        message = error.get("message") if isinstance(error, dict) else None
        raise ProviderUnavailable(
            f"openai: stream error: {message or 'error event'}", provider=PROVIDER
        )
    return chunk


async def _emit(sink: TextSink | None, text: str | None) -> None:
    if sink is not None and text:
        await sink(text)
