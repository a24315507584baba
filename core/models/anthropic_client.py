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

Requests are encoded by ``core.models.anthropic_wire`` (each message once, kept on
the session's ``WireCache``) and sent through ``ModelHTTP`` (one keep-alive aiohttp
session); answers are parsed with orjson. Streaming (when the request has an
``on_text``, or ``model.stream`` is true) sends the same request with ``stream``, passes
each text delta to ``on_text`` and folds the events into the same message
(``AnthropicStream``), so the reply (text, tool calls, stop reason, token counts) is
what the plain request would have given.

Errors map like the openai provider's: 429 -> RateLimited(retry_after), 5xx and
connection failures -> ProviderUnavailable, timeouts and 408 -> ModelTimeout, other
4xx -> ModelRequestError. An ``error`` event inside a stream (the response itself was a
200) maps as the status its error type stands for (``overloaded_error`` as 529,
``rate_limit_error`` as 429...). ``core.models.retrying`` retries.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from core.errors import ConfigError, ModelError
from core.models.anthropic_wire import anthropic_body
from core.models.anthropic_wire import system_blocks as system_blocks
from core.models.anthropic_wire import to_anthropic_messages as to_anthropic_messages
from core.models.anthropic_wire import to_anthropic_tools as to_anthropic_tools
from core.models.anthropic_wire import tool_input as tool_input
from core.models.anthropic_wire import user_blocks as user_blocks
from core.models.base import ModelConfig, ModelReply, ModelRequest, TextSink, ToolCall
from core.models.http import SSE, ModelHTTP
from core.models.image_data import ImageData
from core.models.status import status_error
from core.models.wire import WireCache

PROVIDER = "anthropic"
DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
Json = dict[str, Any]

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


def reply_from_message(message: Json) -> ModelReply:
    """A ``ModelReply`` from an Anthropic message (its JSON, parsed)."""
    try:
        return _reply(message)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ModelError(
            "anthropic: an answer not in the message shape", provider=PROVIDER
        ) from exc


def _reply(message: Json) -> ModelReply:
    blocks = message["content"]
    texts = [block["text"] for block in blocks if block["type"] == "text"]
    calls = tuple(
        ToolCall(id=block["id"], name=block["name"], arguments=json.dumps(block["input"]))
        for block in blocks
        if block["type"] == "tool_use"
    )
    usage = message["usage"]
    cache_read = usage.get("cache_read_input_tokens") or 0
    cache_write = usage.get("cache_creation_input_tokens") or 0
    stop = message.get("stop_reason")
    return ModelReply(
        content="".join(texts) if texts else None,
        tool_calls=calls,
        finish_reason=_FINISH_REASONS.get(stop, stop) if stop else None,
        # input_tokens excludes cached tokens; the neutral count is the whole prompt.
        input_tokens=(usage.get("input_tokens") or 0) + cache_read + cache_write,
        output_tokens=usage.get("output_tokens") or 0,
        model=str(message.get("model") or ""),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


class AnthropicStream:
    """Folds a streamed answer's events into the message the plain request returns."""

    def __init__(self) -> None:
        self.message: Json = {"content": [], "usage": {}}
        self._inputs: dict[int, list[str]] = {}

    def add(self, sse: SSE) -> str | None:
        """Take one event; return its text delta, if it carried one."""
        data = orjson.loads(sse.data)
        kind = data.get("type") or sse.event
        if kind == "error":
            error = data.get("error") or {}
            status = _STREAM_ERROR_STATUS.get(error.get("type") or "", 500)
            raise status_error(PROVIDER, status, error.get("message") or "stream error", {})
        if kind == "message_start":
            self.message = {**data["message"], "content": []}
        elif kind == "content_block_start":
            self.message["content"].append(dict(data["content_block"]))
        elif kind == "content_block_delta":
            return self._delta(data["index"], data["delta"])
        elif kind == "message_delta":
            self.message.update(data.get("delta") or {})
            usage = {k: v for k, v in (data.get("usage") or {}).items() if v is not None}
            self.message["usage"] = {**self.message.get("usage", {}), **usage}
        return None

    def _delta(self, index: int, delta: Json) -> str | None:
        block = self.message["content"][index]
        if delta.get("type") == "text_delta":
            block["text"] = block.get("text", "") + delta["text"]
            return str(delta["text"]) or None
        if delta.get("type") == "input_json_delta":
            self._inputs.setdefault(index, []).append(delta.get("partial_json") or "")
        return None

    def final(self) -> Json:
        """The assembled message (tool inputs parsed from their streamed JSON)."""
        for index, pieces in self._inputs.items():
            text = "".join(pieces)
            self.message["content"][index]["input"] = json.loads(text) if text else {}
        return self.message


class AnthropicModel:
    """A ``ModelClient`` for Anthropic's Messages API (streamed: the module docstring)."""

    def __init__(self, config: ModelConfig) -> None:
        if not config.api_key:
            raise ConfigError("model.anthropic_api_key", "set ANTHROPIC_API_KEY")
        if not config.model:
            raise ConfigError("model.name", "set CHATGATE_MODEL to a Claude model name")
        self._config = config
        headers = {"x-api-key": config.api_key, "anthropic-version": API_VERSION}
        self._http = ModelHTTP(PROVIDER, headers, config.timeout_seconds)
        self._url = (config.base_url or DEFAULT_BASE_URL).rstrip("/") + "/v1/messages"
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
        body = anthropic_body(
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
            return reply_from_message(await self._streamed(body, request.on_text))
        return reply_from_message(await self._http.post(self._url, body))

    async def _streamed(self, body: bytes, on_text: TextSink | None) -> Json:
        """The streamed answer: each text delta goes to ``on_text``, and the message the
        events add up to is returned."""
        stream = AnthropicStream()
        async for sse in self._http.events(self._url, body):
            try:
                text = stream.add(sse)
            except (orjson.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
                raise ModelError(
                    "anthropic: a stream event out of shape", provider=PROVIDER
                ) from exc
            if on_text is not None and text:
                await on_text(text)
        return stream.final()

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._http.aclose()
