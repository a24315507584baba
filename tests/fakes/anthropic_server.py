"""A small fake of Anthropic's Messages API on 127.0.0.1, driven by a script.

Enough for the real ``anthropic`` client: ``POST /v1/messages`` records each request
body in ``requests`` and answers with the next scripted step; with the script empty
it answers ``echo: <last user text>``. Every answer reports 10 fresh input tokens
plus ``cache_read_tokens`` read from and ``cache_write_tokens`` written to the
prompt cache (90 and 0 unless a test sets them).

A request with ``"stream": true`` is answered with the Messages streaming events, as
Anthropic sends them: ``message_start`` (the input and cache counts), a ``ping``, per
content block ``content_block_start``, its deltas (``text_delta`` word by word,
``input_json_delta`` for a tool call's input in two halves) and ``content_block_stop``,
then ``message_delta`` (stop reason, output tokens) and ``message_stop``.
``fail_stream`` scripts an ``error`` event in the middle of a streamed answer. Image
blocks are checked as the API checks them (base64 source, a type it takes);
``image_blocks`` reads them back.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fakes.loopback import LoopbackServer

Json = dict[str, Any]
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


@dataclass(frozen=True, slots=True)
class _Answer:
    content: list[Json]
    stop_reason: str


@dataclass(frozen=True, slots=True)
class _Failure:
    status: int
    retry_after: float | None


@dataclass(frozen=True, slots=True)
class _StreamFailure:
    """A streamed answer that sends ``text`` and then an ``error`` event."""

    text: str
    error_type: str


class FakeAnthropicServer:
    """A scripted Anthropic Messages server; use as ``async with``."""

    def __init__(self) -> None:
        self.requests: list[Json] = []
        # The bytes of each request body, exactly as they arrived.
        self.raw_requests: list[bytes] = []
        self.cache_read_tokens = 90
        self.cache_write_tokens = 0
        self._script: deque[_Answer | _Failure | _StreamFailure] = deque()
        self._ids = itertools.count(1)
        # ``GET /v1/models``: what it lists, to callers holding this key.
        self.models = ["claude-sonnet-4-5"]
        self.api_key = "sk-ant-fake"
        routes = [
            Route("/v1/messages", self._messages, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
        ]
        self._server = LoopbackServer(Starlette(routes=routes))

    @property
    def base_url(self) -> str:
        """The ``base_url`` to give the anthropic client."""
        return self._server.url

    async def __aenter__(self) -> Self:
        await self._server.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._server.stop()

    async def _models(self, request: Request) -> Response:
        if request.headers.get("x-api-key") != self.api_key:
            error = {"type": "authentication_error", "message": "invalid x-api-key"}
            return JSONResponse({"type": "error", "error": error}, status_code=401)
        data = [{"id": name, "type": "model", "display_name": name} for name in self.models]
        return JSONResponse({"data": data, "has_more": False})

    def reply_text(self, text: str) -> None:
        """Answer the next request with one text block."""
        self._script.append(_Answer([{"type": "text", "text": text}], "end_turn"))

    def reply_tool_use(self, name: str, args: Json, *, text: str | None = None) -> str:
        """Answer the next request with a tool_use block; return the block's id."""
        call_id = f"toolu_fake_{next(self._ids)}"
        blocks: list[Json] = [{"type": "text", "text": text}] if text else []
        blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": args})
        self._script.append(_Answer(blocks, "tool_use"))
        return call_id

    def fail(self, *, status: int, retry_after: float | None = None) -> None:
        """Answer the next request with an HTTP error."""
        self._script.append(_Failure(status, retry_after))

    def fail_stream(self, *, text: str = "", error_type: str = "overloaded_error") -> None:
        """Answer the next (streamed) request with ``text``, then an ``error`` event of
        ``error_type``, as Anthropic does when it fails mid-answer."""
        self._script.append(_StreamFailure(text, error_type))

    async def _messages(self, request: Request) -> Response:
        body: Json = await request.json()
        self.requests.append(body)
        self.raw_requests.append(await request.body())
        problem = _bad_image_block(body)
        if problem:  # as the API answers a malformed image block
            error = {"type": "invalid_request_error", "message": problem}
            return JSONResponse({"type": "error", "error": error}, status_code=400)
        step = self._script.popleft() if self._script else None
        if isinstance(step, _Failure):
            return _error_response(step)
        if isinstance(step, _StreamFailure):
            answer = _Answer([{"type": "text", "text": step.text}], "end_turn")
            events = [*self._stream_events(body, answer)][:-2]  # cut before message_delta
            events.append(_event("error", _error_body(step.error_type, "Overloaded")))
            return _sse_response(events)
        answer = step or _Answer(
            [{"type": "text", "text": f"echo: {_last_user_text(body)}"}], "end_turn"
        )
        if body.get("stream"):
            return _sse_response(list(self._stream_events(body, answer)))
        return JSONResponse(self._message_json(body, answer))

    def _message_json(self, body: Json, answer: _Answer) -> Json:
        return {
            "id": f"msg_fake_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": answer.content,
            "stop_reason": answer.stop_reason,
            "stop_sequence": None,
            "usage": self._usage(output_tokens=5),
        }

    def _usage(self, *, output_tokens: int) -> Json:
        return {
            "input_tokens": 10,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": self.cache_write_tokens,
            "cache_read_input_tokens": self.cache_read_tokens,
        }

    def _stream_events(self, body: Json, answer: _Answer) -> Iterator[bytes]:
        """The streaming events of ``answer``: the same message as ``_message_json``."""
        message = self._message_json(body, answer)
        usage = self._usage(output_tokens=1)
        start = {**message, "content": [], "stop_reason": None, "usage": usage}
        yield _event("message_start", {"type": "message_start", "message": start})
        yield _event("ping", {"type": "ping"})
        for index, block in enumerate(answer.content):
            yield from _block_events(index, block)
        delta = {"stop_reason": answer.stop_reason, "stop_sequence": None}
        output = {"output_tokens": message["usage"]["output_tokens"]}
        yield _event("message_delta", {"type": "message_delta", "delta": delta, "usage": output})
        yield _event("message_stop", {"type": "message_stop"})


def _last_user_text(body: Json) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            texts = [b["text"] for b in content if b.get("type") == "text"]
            return "\n".join(texts) if texts else json.dumps(content)
    return ""


def _error_body(error_type: str, message: str) -> Json:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def image_blocks(body: Json, *, message: int | None = None) -> list[tuple[str, bytes]]:
    """The image blocks of a recorded request's user messages, in order, as (media type,
    bytes) (of the message at index ``message`` only, when given)."""
    messages = body.get("messages", [])
    chosen = messages if message is None else [messages[message]]
    return [
        (block["source"]["media_type"], base64.b64decode(block["source"]["data"]))
        for entry in chosen
        if isinstance(entry.get("content"), list)
        for block in entry["content"]
        if block.get("type") == "image"
    ]


def _bad_image_block(body: Json) -> str | None:
    """What the Messages API would refuse in the request's image blocks, if anything."""
    for entry in body.get("messages", []):
        content = entry.get("content")
        for block in content if isinstance(content, list) else ():
            if block.get("type") == "text" and not block.get("text"):
                return "text content blocks must be non-empty"
            if block.get("type") != "image":
                continue
            source = block.get("source") or {}
            if source.get("type") != "base64" or source.get("media_type") not in IMAGE_TYPES:
                return f"image source not supported: {source.get('type')}"
            try:
                base64.b64decode(source.get("data", ""), validate=True)
            except ValueError:
                return "image data is not valid base64"
    return None


def _error_response(failure: _Failure) -> Response:
    headers = {} if failure.retry_after is None else {"retry-after": str(failure.retry_after)}
    error = _error_body("fake_error", f"fake {failure.status}")
    return JSONResponse(error, status_code=failure.status, headers=headers)


# -- streaming ------------------------------------------------------------------------


def _event(name: str, data: Json) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _block_events(index: int, block: Json) -> Iterator[bytes]:
    """One content block: its start (empty), its deltas, its stop."""
    if block["type"] == "text":
        opening: Json = {"type": "text", "text": ""}
        pieces = re.findall(r"\s*\S+\s*", block["text"]) or [block["text"]]
        deltas = [{"type": "text_delta", "text": piece} for piece in pieces]
    else:  # tool_use: the input arrives as JSON text in two halves
        opening = {**block, "input": {}}
        arguments = json.dumps(block["input"])
        half = len(arguments) // 2
        deltas = [
            {"type": "input_json_delta", "partial_json": part}
            for part in ("", arguments[:half], arguments[half:])
        ]
    yield _event(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": opening},
    )
    for delta in deltas:
        yield _event(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )
    yield _event("content_block_stop", {"type": "content_block_stop", "index": index})


def _sse_response(events: list[bytes]) -> Response:
    async def body() -> AsyncIterator[bytes]:
        for event in events:
            yield event

    return StreamingResponse(body(), media_type="text/event-stream")
