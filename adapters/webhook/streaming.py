"""Server-Sent Events on ``POST /webhook/{route}``: the reply as it is generated.

A request that sends ``Accept: text/event-stream`` (and waits: not ``?wait=false``,
which answers 202 as always) is answered ``text/event-stream``::

    event: delta   data: {"text": "<the new piece>"}       each piece, as generated
    event: tool    data: {"text": "searching past sessions…"}  a tool call starts
    event: done    data: <the body a waiting POST answers>     once, last

- **No delta missed.** ``EventStreams`` is the adapter's ``previews``: the core opens a
  preview for a message only while a request listens for it. The request registers its
  listener under the message's dedup key *before* the inbox accepts the message, so the
  turn, however soon it starts, finds it. No pacing: every delta is sent as it comes.
- **done** carries what a waiting POST answers: the ``WebhookTurn`` body (session_id,
  message_id, replies; approvals when the turn paused for them), or the queued body a
  202 carries when the turn is not done within ``webhook.wait_timeout_seconds`` (the
  replies are then pulled, as after a 202).
- **A redelivery** (the same message_id) gets its first turn's done; deltas only if no
  other request is streaming that message.
- **Off.** ``webhook.streaming: off`` (no ``previews``) or ``streaming.enabled: false``:
  the stream carries only done: the client asked for events, so it gets events.
- **Always a done.** If the turn's replies cannot be read (the store is down, the
  gateway drains), done carries the 202 body: the client pulls them later.
- **A client that goes away** costs nothing: the turn goes on, its replies are stored
  and pulled as today (``GET .../replies``); they are recorded delivered only once a
  done event was written.
- Errors before the stream starts (signature, body, access) are the usual JSON 4xx.
- While nothing else is sent, a ``: ping`` comment every ``PING_SECONDS`` keeps
  proxies from closing an idle connection during a long tool call.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastapi.sse import KEEPALIVE_COMMENT, EventSourceResponse, format_sse_event
from starlette.requests import Request

from core.errors import ChatgateError
from core.messages import OutboundMessage
from core.record import record
from core.store.records import InboxItem
from core.streaming import Preview, PreviewRequest
from core.tasks import TaskSet

log = logging.getLogger(__name__)

EVENT_STREAM = "text/event-stream"
PING_SECONDS = 15.0
# Proxies (nginx) buffer a response unless told not to; events must go out at once.
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@record
class Event:
    """One event for the client; ``replies`` are those a done event hands out."""

    kind: str
    data: dict[str, Any]
    replies: Sequence[OutboundMessage] = ()


# The done event's body and the replies it hands out (see the module docstring).
Done = tuple[dict[str, Any], Sequence[OutboundMessage]]


@dataclass(eq=False, slots=True)
class Listener:
    """One streaming request's queue of events; ``closed`` once the request is over."""

    key: str
    queue: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)
    closed: bool = False

    def put(self, event: Event) -> None:
        if not self.closed:
            self.queue.put_nowait(event)


class EventPreview:
    """A ``core.streaming.Preview`` that turns what the model generates into events."""

    def __init__(self, listener: Listener) -> None:
        self._listener = listener

    async def text(self, delta: str) -> None:
        self._listener.put(Event("delta", {"text": delta}))

    async def tool(self, line: str) -> None:
        self._listener.put(Event("tool", {"text": line}))

    async def finish(self) -> str | None:
        return None  # the reply itself comes in the done event, not in a message to edit

    async def discard(self) -> None:
        return None


class EventStreams:
    """The webhook's previews: listeners of streaming requests, by dedup key."""

    def __init__(self, delivered: Callable[[Sequence[OutboundMessage]], None]) -> None:
        self._delivered = delivered
        self._listeners: dict[str, Listener] = {}
        self._tasks = TaskSet("webhook-events")

    def open(self, request: PreviewRequest) -> Preview | None:
        """A preview for the message a request is streaming, else None."""
        listener = self._listeners.get(request.message.dedup_key)
        return EventPreview(listener) if listener is not None else None

    async def stream(
        self,
        key: str,
        accept: Callable[[], Awaitable[InboxItem]],
        done: Callable[[InboxItem], Awaitable[Done | None]],
    ) -> EventSourceResponse:
        """Listen for the message under ``key``, ``accept`` it, and answer its events.

        Whatever ``accept`` raises (a refusal) is raised here, before any event."""
        listener = Listener(key)
        if key not in self._listeners:  # else another request streams it: done only
            self._listeners[key] = listener
        try:
            item = await accept()
        except BaseException:
            self._forget(listener)
            raise
        return EventSourceResponse(self._events(listener, item, done), headers=STREAM_HEADERS)

    async def close(self) -> None:
        await self._tasks.close()

    async def _events(
        self,
        listener: Listener,
        item: InboxItem,
        done: Callable[[InboxItem], Awaitable[Done | None]],
    ) -> AsyncIterator[bytes]:
        finisher = self._tasks.spawn(self._conclude(listener, item, done), name="done")
        try:
            while True:
                try:
                    async with asyncio.timeout(PING_SECONDS):
                        event = await listener.queue.get()
                except TimeoutError:
                    yield KEEPALIVE_COMMENT
                    continue
                yield encode(event)
                if event.kind == "done":
                    self._delivered(event.replies)  # written: the client has them
                    return
        finally:  # done, or the client went away (the turn goes on regardless)
            self._forget(listener)
            finisher.cancel()

    async def _conclude(
        self,
        listener: Listener,
        item: InboxItem,
        done: Callable[[InboxItem], Awaitable[Done | None]],
    ) -> None:
        body: dict[str, Any] = queued_body(item)
        replies: Sequence[OutboundMessage] = ()
        try:  # whatever happens, one done ends the stream: at worst the 202 body (pull)
            finished = await done(item)
            if finished is not None:
                body, replies = finished
        except ChatgateError as exc:  # the store, read for a redelivery's replies
            log.warning("webhook stream: the turn's replies not read (%s)", type(exc).__name__)
        finally:
            listener.put(Event("done", body, replies))

    def _forget(self, listener: Listener) -> None:
        listener.closed = True
        if self._listeners.get(listener.key) is listener:
            del self._listeners[listener.key]


def queued_body(item: InboxItem) -> dict[str, Any]:
    """What a request answers when the turn is not done (yet): 202's body."""
    return {"message_id": item.message.platform_message_id, "status": "queued"}


def encode(event: Event) -> bytes:
    """The event on the wire; its data as the JSON responses use (UTF-8, compact)."""
    data = json.dumps(event.data, ensure_ascii=False, separators=(",", ":"))
    return format_sse_event(event=event.kind, data_str=data)


def wants_events(request: Request) -> bool:
    """Whether the request's ``Accept`` asks for ``text/event-stream`` (with a quality
    above zero, and not below ``application/json``'s)."""
    accept = request.headers.get("accept", "").lower()
    if EVENT_STREAM not in accept:
        return False
    quality: dict[str, float] = {}
    for item in accept.split(","):
        kind, _, params = item.strip().partition(";")
        quality[kind.strip()] = _quality(params)
    events = quality.get(EVENT_STREAM, 0.0)
    return events > 0 and events >= quality.get("application/json", 0.0)


def _quality(params: str) -> float:
    for param in params.split(";"):
        name, _, value = param.strip().partition("=")
        if name.strip().lower() == "q":
            try:
                return float(value)
            except ValueError:
                return 0.0
    return 1.0


# What the OpenAPI schema says of the stream (the 200 answer's second media type).
STREAM_OPENAPI: dict[int | str, dict[str, Any]] = {
    200: {
        "description": (
            "The turn's replies. With `Accept: text/event-stream`: Server-Sent Events, "
            '`event: delta` (`{"text": "<the new piece>"}`) as the reply is generated, '
            '`event: tool` (`{"text": "<what a tool call does>"}`), then one '
            "`event: done` whose data is this JSON body (or, when the turn is not done "
            "in time, the 202 body)."
        ),
        "content": {EVENT_STREAM: {"schema": {"type": "string"}}},
    }
}
