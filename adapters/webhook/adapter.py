"""Webhook adapter: any system that can POST JSON talks to the agent.

``POST /webhook/{route}`` accepts ``{"chat_id", "user_id", "text", "message_id"?,
"user_name"?, "thread_id"?, "attachments"?}`` (images: ``adapters.webhook.images``).
The message is committed to the inbox before any answer; by default the request then
waits for the turn and returns its replies, with ``?wait=false`` it answers 202 and the
replies are read from
``GET /webhook/{route}/chats/{chat_id}/replies?after=<cursor>``. A turn that pauses
for an approval answers a waiting request at once, with ``approvals``; they are decided
through ``POST /webhook/{route}/approvals/{id}`` (``adapters.webhook.approvals``). Files
sent with a reply are listed in it and served by ``GET /webhook/{route}/files/{id}``
(``adapters.webhook.files``). With ``Accept: text/event-stream`` the reply streams as
Server-Sent Events (``adapters.webhook.streaming``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import field
from pathlib import Path as FsPath
from typing import Annotated, Any, TypeVar

from fastapi import FastAPI, Path, Query, Request
from fastapi.responses import Response

from adapters.direct_route import DirectRoute
from adapters.webhook.approvals import ApprovalRoute
from adapters.webhook.auth import (
    PREFIX,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    request_target,
    verify,
)
from adapters.webhook.files import FileRoute, reply_files, reply_json
from adapters.webhook.images import with_images
from adapters.webhook.json_body import JsonResponse
from adapters.webhook.replay import ReplayCache
from adapters.webhook.request_body import read_capped, read_flag
from adapters.webhook.schema import (
    ID_MAX,
    POST_ERRORS,
    POST_OPENAPI,
    ROUTE_REGEX,
    SIGNATURE_PARAMETERS,
    SIGNED_ERRORS,
    PulledAction,
    PulledReplies,
    PulledReply,
    WebhookMessage,
    WebhookTurn,
    parse_body,
)
from adapters.webhook.streaming import (
    STREAM_OPENAPI,
    Done,
    EventStreams,
    queued_body,
    wants_events,
)
from core.access import TurnedAway
from core.errors import RequestRefused, SignatureError, StoreError, StoreUnavailable
from core.inbox import Inbox
from core.ledger import DeliveryLedger
from core.media.store import MediaStore
from core.messages import InboundMessage, OutboundMessage
from core.record import record
from core.store.records import InboxItem

T = TypeVar("T")
log = logging.getLogger(__name__)

ROUTE_PATTERN = re.compile(ROUTE_REGEX)
# Documented, not validated by FastAPI: an unknown route name is a 404, as on POST.
RouteName = Annotated[str, Path(json_schema_extra={"pattern": ROUTE_REGEX})]
REPLAYED = "this signature was already used: sign each request anew"
UNAVAILABLE = "the gateway is starting or stopping; retry shortly"
# A stopping gateway is usually back (restarted by systemd or Docker) within seconds.
RETRY_AFTER_SECONDS = "5"


@record
class WebhookOptions:
    """Webhook settings as the adapter needs them (mapped from the gateway config)."""

    secret: str | None = field(default=None, repr=False)
    route_secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    max_body_bytes: int = 8 * 1024 * 1024
    max_skew_seconds: float = 300.0
    wait_timeout_seconds: float = 120.0
    # Also accept the old signature over timestamp and body only.
    legacy_signatures: bool = False
    # Signatures remembered at once (one skew window's worth); past it, 503.
    replay_cache_size: int = 100_000
    # Each user of a chat has their own session (the chat is treated as a group).
    sessions_per_user: bool = False
    media: MediaStore | None = None  # where the files replies carry are stored
    # Server-Sent Events carry the model's deltas (off: only the done event).
    streaming: bool = True
    # Images sent with messages are saved under <cache_dir>/webhook/.
    cache_dir: FsPath = FsPath("cache")
    fetch_private_urls: bool = False


class WebhookAdapter:
    """Pull adapter for HTTP webhooks; see the module docstring."""

    name = "webhook"
    push = False

    def __init__(self, options: WebhookOptions, *, now: Callable[[], float] = time.time) -> None:
        self.options = options
        self._now = now
        self._inbox: Inbox | None = None
        self._ledger: DeliveryLedger | None = None
        self._seen = ReplayCache(options.replay_cache_size)
        self._events = EventStreams(self._delivered)
        self.previews = self._events if options.streaming else None

    @property
    def healthy(self) -> bool:
        return True  # nothing to connect to: requests come to us

    async def start(self, inbox: Inbox, ledger: DeliveryLedger) -> None:
        self._inbox = inbox
        self._ledger = ledger

    async def stop(self) -> None:
        self._inbox = None
        await self._events.close()

    async def send(self, msg: OutboundMessage) -> str | None:
        raise RuntimeError("webhook replies are pulled, never pushed")

    # HTTP
    def install(self, app: FastAPI) -> None:
        """Add the webhook routes to ``app``.

        On the app itself, not through ``include_router``: FastAPI 0.165 matches an
        included router's routes through an extra layer on every request (~9
        microseconds of ~100 measured in-process).
        """
        app.router.add_api_route(
            "/webhook/{route}",
            self.post_message,
            route_class_override=DirectRoute,
            methods=["POST"],
            response_model=WebhookTurn,
            responses={**POST_ERRORS, **STREAM_OPENAPI},
            openapi_extra=POST_OPENAPI,
            summary="Send a chat message to the agent",
            tags=["webhook"],
        )
        app.add_api_route(
            # ``:path``: a chat id may hold a ``/``, sent as ``%2F`` and decoded before
            # routing.
            "/webhook/{route}/chats/{chat_id:path}/replies",
            self.get_replies,
            methods=["GET"],
            response_model=PulledReplies,
            responses=SIGNED_ERRORS,
            openapi_extra={"parameters": SIGNATURE_PARAMETERS},
            summary="Read replies for a chat after a cursor",
            tags=["webhook"],
        )
        ApprovalRoute(self.name, self._require_inbox, self._read_body).install(app)
        FileRoute(self.name, self._require_inbox, self._read_body, self.options.media).install(app)

    async def post_message(self, request: Request) -> Response:
        """Accept one message; with ``wait`` (default) answer with the turn's replies
        (as events with ``Accept: text/event-stream``)."""
        # Only ``Request`` as a parameter: FastAPI solving ``route`` and ``wait`` cost ~16
        # microseconds of ~100 a request took in-process.
        try:
            wait = read_flag(request, "wait", default=True)
            inbox = self._require_intake()
            route: str = request.path_params["route"]
            body, replayed = await self._read_body(route, request)
            parsed = parse_body(body, WebhookMessage)
            # With a message id, the inbox answers a replay from the first turn.
            _refuse_replay(replayed and parsed.message_id is None)
            msg = self._inbound(route, parsed)
            # A stranger's images are never fetched: the policy is asked first.
            if parsed.attachments and await self._admits(inbox, msg):
                msg = await self._with_images(msg, parsed)
            if wait and wants_events(request):
                return await self._events.stream(
                    msg.dedup_key,
                    lambda: _accepted(inbox, msg),
                    lambda item: self._done(inbox, item),
                )
            item = await _accepted(inbox, msg)
        except RequestRefused as problem:
            return JsonResponse(problem.body, status_code=problem.status, headers=problem.headers)
        done = await self._done(inbox, item) if wait else None
        if done is None:
            return JsonResponse(queued_body(item), status_code=202)
        self._delivered(done[1])
        return JsonResponse(done[0])

    async def get_replies(
        self,
        route: RouteName,
        chat_id: Annotated[str, Path(min_length=1, max_length=ID_MAX)],
        request: Request,
        after: Annotated[int, Query(ge=0, le=2**63 - 1)] = 0,
        limit: Annotated[int, Query(ge=1, le=500)] = 100,
    ) -> JsonResponse:
        """Replies for ``chat_id`` with an id above ``after``; ``cursor`` is the next ``after``."""
        try:
            inbox = self._require_inbox()
            _refuse_replay((await self._read_body(route, request))[1])
            replies = await _stored(
                inbox.replies_after(
                    platform=self.name, route=route, chat_id=chat_id, after=after, limit=limit
                )
            )
        except RequestRefused as problem:
            return JsonResponse(problem.body, status_code=problem.status, headers=problem.headers)
        self._delivered(replies)
        pulled = PulledReplies(
            replies=[
                PulledReply(
                    id=r.id,
                    text=r.text,
                    session_id=r.session_id,
                    message_id=r.reply_to,
                    created_at=r.created_at,
                    actions=[PulledAction(label=a.label, command=a.command) for a in r.actions],
                    files=reply_files(route, r.files),
                )
                for r in replies
            ],
            cursor=replies[-1].id if replies else after,
        )
        return JsonResponse(pulled.model_dump())

    async def _done(self, inbox: Inbox, item: InboxItem) -> Done | None:
        """The ``WebhookTurn`` body for ``item`` and the replies it hands out, or None if
        it is not ready in time (the caller records them delivered once it answered)."""
        # Shielded: the turn, and anyone else waiting for it, outlive this timeout.
        # ``shield`` starts a task only when given a coroutine, and ``wait_for`` none
        # when given a future; ``asyncio.timeout`` measured slower here on uvloop.
        try:
            turn = await asyncio.wait_for(
                asyncio.shield(inbox.replies(item)), self.options.wait_timeout_seconds
            )
        except TimeoutError:
            return None
        if turn.pending:
            return None  # a redelivery of a message still waiting for its turn
        body: dict[str, Any] = {
            "session_id": turn.session_id,
            "message_id": item.message.platform_message_id,
            "replies": [reply_json(item.message.route or "", r) for r in turn.replies],
        }
        if turn.approvals:  # paused: the rest of the turn's replies are pulled later
            body["approvals"] = [
                {"id": a.id, "tool": a.tool_name, "arguments": a.arguments} for a in turn.approvals
            ]
        return body, turn.replies

    def _delivered(self, replies: Sequence[OutboundMessage]) -> None:
        if self._ledger is not None:
            self._ledger.delivered(replies)

    def _require_inbox(self) -> Inbox:
        if self._inbox is None:
            raise RequestRefused(503, UNAVAILABLE, {"Retry-After": RETRY_AFTER_SECONDS})
        return self._inbox

    def _require_intake(self) -> Inbox:
        inbox = self._require_inbox()
        if not inbox.accepting:  # stopping: the client retries rather than wait for a restart
            raise RequestRefused(503, UNAVAILABLE, {"Retry-After": RETRY_AFTER_SECONDS})
        return inbox

    async def _read_body(self, route: str, request: Request) -> tuple[bytes, bool]:
        """The body, and whether its signature was seen before (a replay)."""
        if not ROUTE_PATTERN.match(route):
            raise RequestRefused(404, "unknown route: use letters, digits, '.', '_' or '-'")
        body = await read_capped(request, self.options.max_body_bytes)
        secret = self.options.route_secrets.get(route) or self.options.secret
        if not secret:
            return body, False
        return body, self._replayed(secret, request, body)

    def _replayed(self, secret: str, request: Request, body: bytes) -> bool:
        now, skew = self._now(), self.options.max_skew_seconds
        timestamp = request.headers.get(TIMESTAMP_HEADER)
        try:
            signature = verify(
                secret,
                timestamp=timestamp,
                signature=request.headers.get(SIGNATURE_HEADER),
                method=request.method,
                target=request_target(request.scope),
                body=body,
                now=now,
                max_skew=skew,
                legacy=self.options.legacy_signatures,
            )
        except SignatureError as exc:
            raise RequestRefused(401, str(exc)) from None
        # ``verify`` checked the timestamp: it is an int within the skew window. The
        # digest's 32 bytes are kept, not its hex (half the cache's memory).
        digest = bytes.fromhex(signature.decode()[len(PREFIX) :])
        return self._seen.seen(digest, now=now, expires_at=int(timestamp or 0) + skew)

    async def _admits(self, inbox: Inbox, msg: InboundMessage) -> bool:
        admitted: bool = await _stored(inbox.admits(msg))
        return admitted

    async def _with_images(self, msg: InboundMessage, body: WebhookMessage) -> InboundMessage:
        folder = self.options.cache_dir / self.name
        private = self.options.fetch_private_urls
        try:
            return await with_images(msg, body.attachments, folder, fetch_private=private)
        except OSError as exc:  # the cache cannot be written (disk full): retry later
            log.warning("webhook: an image could not be saved: %s", exc.strerror)
            raise RequestRefused(503, "the image could not be saved; retry shortly") from None

    def _inbound(self, route: str, body: WebhookMessage) -> InboundMessage:
        message_id = body.message_id or f"auto-{secrets.token_hex(12)}"
        return InboundMessage(
            platform=self.name,
            route=route,
            chat_id=body.chat_id,
            user_id=body.user_id,
            user_name=body.user_name,
            thread_id=body.thread_id,
            is_group=self.options.sessions_per_user,
            text=body.text,
            platform_message_id=message_id,
            # Message ids are only unique within a chat of a route.
            dedup_key=json.dumps([route, body.chat_id, message_id]),
            received_at=self._now(),
        )


def _refuse_replay(replayed: bool) -> None:
    if replayed:
        raise RequestRefused(409, REPLAYED)


async def _accepted(inbox: Inbox, msg: InboundMessage) -> InboxItem:
    """``msg`` committed to the inbox; a refusal (403, 503) is raised."""
    admission = await _stored(inbox.accept(msg))
    # The route's secret authenticates webhook requests: the core does not gate them.
    if isinstance(admission, TurnedAway):
        raise RequestRefused(403, admission.reply or "not allowed to talk to this agent")
    return admission.item


async def _stored(call: Awaitable[T]) -> T:
    """Await a SessionDB call; a database outage is a 503 the client can retry."""
    try:
        return await call
    except StoreError as exc:
        if not isinstance(exc, StoreUnavailable):  # those the store health logs, once
            log.warning("webhook request refused: SessionDB unavailable")
        raise RequestRefused(
            503, "the message store is unavailable; retry shortly", {"Retry-After": "1"}
        ) from None
