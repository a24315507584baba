"""A fake OpenAI-compatible server on 127.0.0.1, driven by a script.

Tests talk to it through the real ``openai`` client, so request encoding, response
parsing, streaming and error mapping are all exercised for real::

    async with FakeOpenAIServer() as fake:
        fake.fail(status=500)
        fake.reply_tool_call("memory", {"action": "add"})
        client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="sk-test")

``fake.audio`` serves ``/v1/audio/transcriptions`` and ``/v1/audio/speech``
(``tests.fakes.openai_audio``).

Each request to ``POST /v1/chat/completions`` (or ``/chat/completions``) is recorded
in ``requests`` and consumes the next scripted step. With the script empty the
server answers ``echo: <last user message>`` at once, which is cheap enough for
benchmarks (pass ``record=False`` there so ``requests`` does not grow).

Set ``cache_read_tokens`` to have every answer report that many prompt tokens as
read from the prefix cache (``usage.prompt_tokens_details.cached_tokens``); left at
None the usage carries no details, as many compatible servers send.

The server itself is a ``tests.fakes.loopback.LoopbackServer``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import re
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fakes.loopback import LoopbackServer
from tests.fakes.openai_audio import FakeAudio

Json = dict[str, Any]
CREATED = 1_780_000_000


@dataclass(frozen=True, slots=True)
class FakeToolCall:
    """A tool call the fake model will make."""

    name: str
    arguments: str
    id: str


@dataclass(frozen=True, slots=True)
class Reply:
    """A scripted assistant answer: text, tool calls or both."""

    text: str | None
    tool_calls: tuple[FakeToolCall, ...] = ()
    finish_reason: str = "stop"


@dataclass(frozen=True, slots=True)
class Failure:
    """A scripted HTTP error, optionally with a Retry-After header."""

    status: int
    message: str
    retry_after: float | str | None = None


@dataclass(frozen=True, slots=True)
class Hang:
    """Answer only after ``seconds`` (or at shutdown): long enough to hit a client timeout."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Block:
    """Answer only once ``release`` is set (or at shutdown), then take the next step."""

    release: asyncio.Event


Step = Reply | Failure | Hang | Block


class FakeOpenAIServer:
    """A scripted OpenAI chat-completions server; use as ``async with``.

    ``record=False`` stops ``requests`` from growing (benchmarks);
    ``latency_seconds`` adds a fixed pause to every answer (simulated model time);
    ``token_seconds`` paces a streamed answer: that long between its text pieces (a
    model generating ``1 / token_seconds`` tokens a second).
    """

    def __init__(
        self, *, record: bool = True, latency_seconds: float = 0.0, token_seconds: float = 0.0
    ) -> None:
        self.record = record
        self.latency_seconds = latency_seconds
        self.token_seconds = token_seconds
        self.cache_read_tokens: int | None = None
        self.requests: list[Json] = []
        # The bytes of each recorded request body, exactly as they arrived.
        self.raw_requests: list[bytes] = []
        self._script: deque[Step] = deque()
        # Requests whose last user message contains a marker take steps from its own script.
        self._routed: dict[str, deque[Step]] = {}
        self.routed_latency: dict[str, float] = {}
        self.started: dict[str, int] = {}
        self._arrivals: dict[str, asyncio.Event] = {}
        self._ids = itertools.count(1)
        self._closing = asyncio.Event()
        # What ``GET /v1/models`` lists (``chatgate doctor`` checks the model name there);
        # None: the route answers 404, as on servers that serve no model list.
        self.models: list[str] | None = ["fake-model"]
        routes = [
            Route(path, self._chat_completions, methods=["POST"])
            for path in ("/v1/chat/completions", "/chat/completions")
        ]
        routes.append(Route("/v1/models", self._models, methods=["GET"]))
        # Speech to text and back: ``tests.fakes.openai_audio``.
        self.audio = FakeAudio()
        routes += self.audio.routes()
        self._server = LoopbackServer(Starlette(routes=routes))

    @property
    def base_url(self) -> str:
        """The ``base_url`` to give the openai client (ends in ``/v1``)."""
        return f"{self._server.url}/v1"

    def gateway_env(self, **extra: str) -> dict[str, str]:
        """Environment variables that point chatgate at this server (plus ``extra``)."""
        return {
            "OPENAI_BASE_URL": self.base_url,
            "OPENAI_API_KEY": "sk-test",
            "CHATGATE_MODEL": "fake-model",
            **extra,
        }

    @property
    def pending_steps(self) -> int:
        """Scripted steps not yet consumed."""
        return len(self._script)

    async def __aenter__(self) -> Self:
        await self._server.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing.set()  # release hanging handlers so shutdown is prompt
        await self._server.stop()

    # -- the script ---------------------------------------------------------------

    def _queue(self, when: str | None) -> deque[Step]:
        return self._script if when is None else self._routed.setdefault(when, deque())

    def reply_text(
        self, text: str, *, finish_reason: str = "stop", when: str | None = None
    ) -> None:
        """Answer the next request with plain text.

        With ``when``, the step is kept for requests whose last user message mentions
        ``when`` (a background review's instruction, say), apart from the main script.
        """
        self._queue(when).append(Reply(text=text, finish_reason=finish_reason))

    def reply_tool_call(
        self,
        name: str,
        args: Json,
        *,
        call_id: str | None = None,
        text: str | None = None,
        when: str | None = None,
    ) -> None:
        """Answer the next request with one tool call (and optional text)."""
        ids = [call_id] if call_id else None
        self.reply_tool_calls([(name, args)], text=text, call_ids=ids, when=when)

    def reply_tool_calls(
        self,
        calls: list[tuple[str, Json]],
        *,
        text: str | None = None,
        call_ids: list[str] | None = None,
        when: str | None = None,
    ) -> None:
        """Answer the next request with several tool calls in one message."""
        ids = call_ids or [f"call_{next(self._ids)}" for _ in calls]
        tool_calls = tuple(
            FakeToolCall(name=name, arguments=json.dumps(args), id=call_id)
            for (name, args), call_id in zip(calls, ids, strict=True)
        )
        reply = Reply(text=text, tool_calls=tool_calls, finish_reason="tool_calls")
        self._queue(when).append(reply)

    def block(self, release: asyncio.Event, *, when: str | None = None) -> None:
        """Hold the next request until ``release`` is set; it then takes the next step."""
        self._queue(when).append(Block(release))

    def arrival(self, marker: str) -> asyncio.Event:
        """Set once a request mentioning ``marker`` (with its own script) has arrived."""
        return self._arrivals.setdefault(marker, asyncio.Event())

    def requests_for(self, marker: str) -> list[Json]:
        """Recorded requests whose last user message mentions ``marker``."""
        return [body for body in self.requests if _mentions(body, marker)]

    def fail(
        self, *, status: int, retry_after: float | str | None = None, message: str = ""
    ) -> None:
        """Answer the next request with an HTTP error (429 may carry ``retry_after``)."""
        self._script.append(Failure(status, message or f"fake error {status}", retry_after))

    def hang(self, seconds: float) -> None:
        """Delay the next answer by ``seconds``; it then echoes as if unscripted."""
        self._script.append(Hang(seconds))

    # -- serving ------------------------------------------------------------------

    async def _models(self, request: Request) -> Response:
        if self.models is None:
            return JSONResponse({"error": {"message": "not found"}}, status_code=404)
        if not request.headers.get("authorization", "").startswith("Bearer "):
            return JSONResponse({"error": {"message": "no API key"}}, status_code=401)
        data = [{"id": name, "object": "model", "owned_by": "fake"} for name in self.models]
        return JSONResponse({"object": "list", "data": data})

    async def _chat_completions(self, request: Request) -> Response:
        body: Json = await request.json()
        if self.record:
            self.requests.append(body)
            self.raw_requests.append(await request.body())
        marker = next((m for m in self._routed_markers() if _mentions(body, m)), None)
        queue = self._script if marker is None else self._routed.setdefault(marker, deque())
        if marker is not None:
            self.started[marker] = self.started.get(marker, 0) + 1
            self.arrival(marker).set()
        step = queue.popleft() if queue else None
        while isinstance(step, Block):
            await self._released(step.release)
            step = queue.popleft() if queue else None
        latency = self.latency_seconds + self.routed_latency.get(marker or "", 0.0)
        if latency:
            await asyncio.sleep(latency)  # simulated model latency
        if isinstance(step, Failure):
            return _error_response(step)
        if isinstance(step, Hang):
            await self._wait_or_close(step.seconds)
            step = None
        reply = step or Reply(text=f"echo: {last_user_content(body)}")
        usage = usage_json(body, reply, cached_tokens=self.cache_read_tokens)
        if body.get("stream"):
            return StreamingResponse(
                _sse(body, reply, next(self._ids), usage, self.token_seconds),
                media_type="text/event-stream",
            )
        return JSONResponse(completion_json(body, reply, next(self._ids), usage))

    def _routed_markers(self) -> list[str]:
        return [*self._routed, *(m for m in self.routed_latency if m not in self._routed)]

    async def _released(self, release: asyncio.Event) -> None:
        closing = asyncio.ensure_future(self._closing.wait())
        released = asyncio.ensure_future(release.wait())
        try:
            await asyncio.wait({closing, released}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closing.cancel()
            released.cancel()

    async def _wait_or_close(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._closing.wait()


def _mentions(body: Json, marker: str) -> bool:
    return marker in last_user_content(body)


def last_user_content(body: Json) -> str:
    """The text of the last user message in a request body (its text parts, when it has
    image parts too)."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def content_text(content: Any) -> str:
    """A message's text: the content itself, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(part, dict) for part in content):
        return "\n".join(p["text"] for p in content if p.get("type") == "text")
    return json.dumps(content)


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An ``image_url`` part of a request, decoded from its data URL."""

    mime: str
    data: bytes


def image_parts(body: Json, *, message: int | None = None) -> list[ImagePart]:
    """The image parts of a recorded request's user messages, in order (of the user
    message at index ``message`` of ``messages`` only, when given)."""
    messages = body.get("messages", [])
    chosen = messages if message is None else [messages[message]]
    parts: list[ImagePart] = []
    for entry in chosen:
        content = entry.get("content")
        if entry.get("role") != "user" or not isinstance(content, list):
            continue
        for part in content:
            if part.get("type") == "image_url":
                head, _, data = part["image_url"]["url"].partition(",")
                mime = head.removeprefix("data:").removesuffix(";base64")
                assert head == f"data:{mime};base64", head
                parts.append(ImagePart(mime, base64.b64decode(data, validate=True)))
    return parts


def _words(text: str | None) -> int:
    return len(text.split()) if text else 0


def usage_json(body: Json, reply: Reply, *, cached_tokens: int | None = None) -> Json:
    """Token counts the fake reports: whitespace-separated words, deterministic.

    ``cached_tokens``, when given, is reported as read from the prompt cache.
    """
    prompt = sum(_words(content_text(m.get("content") or "")) for m in body.get("messages", []))
    completion = _words(reply.text) + sum(_words(c.arguments) for c in reply.tool_calls)
    usage: Json = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return usage


def _tool_call_json(call: FakeToolCall) -> Json:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def completion_json(body: Json, reply: Reply, number: int, usage: Json) -> Json:
    """A non-streamed ``chat.completion`` object."""
    message: Json = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["tool_calls"] = [_tool_call_json(call) for call in reply.tool_calls]
    return {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": CREATED,
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": usage,
    }


def _error_response(failure: Failure) -> Response:
    headers = {}
    if failure.retry_after is not None:
        headers["retry-after"] = _header_value(failure.retry_after)
    error = {"message": failure.message, "type": "fake_error", "param": None, "code": None}
    return JSONResponse({"error": error}, status_code=failure.status, headers=headers)


def _header_value(value: float | str) -> str:
    if isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() else str(value)


# -- streaming ------------------------------------------------------------------------


def text_pieces(text: str) -> list[str]:
    """Split text into word-sized deltas, keeping the whitespace."""
    return re.findall(r"\s*\S+\s*", text) or [text]


def _tool_call_deltas(index: int, call: FakeToolCall) -> list[Json]:
    # The first delta names the call; the arguments then arrive in two halves, as
    # real servers split them at arbitrary points.
    half = len(call.arguments) // 2
    opening = {
        "index": index,
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": ""},
    }
    return [
        opening,
        {"index": index, "function": {"arguments": call.arguments[:half]}},
        {"index": index, "function": {"arguments": call.arguments[half:]}},
    ]


def stream_deltas(reply: Reply) -> list[Json]:
    """The ``delta`` objects of a streamed reply, in order."""
    deltas: list[Json] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": piece} for piece in text_pieces(reply.text or "") if reply.text]
    for index, call in enumerate(reply.tool_calls):
        deltas += [{"tool_calls": [delta]} for delta in _tool_call_deltas(index, call)]
    return deltas


def _chunk(body: Json, number: int, choices: list[Json], usage: Json | None = None) -> bytes:
    chunk = {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": body.get("model", "fake"),
        "choices": choices,
        "usage": usage,
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


async def _sse(
    body: Json, reply: Reply, number: int, usage: Json, token_seconds: float = 0.0
) -> AsyncIterator[bytes]:
    for delta in stream_deltas(reply):
        if token_seconds and delta.get("content"):
            await asyncio.sleep(token_seconds)  # the simulated model's generation pace
        yield _chunk(body, number, [{"index": 0, "delta": delta, "finish_reason": None}])
    finish = {"index": 0, "delta": {}, "finish_reason": reply.finish_reason}
    yield _chunk(body, number, [finish])
    if (body.get("stream_options") or {}).get("include_usage"):
        yield _chunk(body, number, [], usage)
    yield b"data: [DONE]\n\n"
