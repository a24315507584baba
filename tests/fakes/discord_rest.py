"""The REST side (``/api/v10``) of ``tests.fakes.discord_server.FakeDiscord``.

Routing, bot-token and interaction-token auth, request recording, injected failures
(``fail``) and the handlers: login and gateway discovery, channels, messages (send with
Discord's validation, history, fetch, edit, delete), typing, DMs, members, application
commands, interaction callbacks (4 and 5; 6 and 7 for a clicked button), followups and
``@original``; attachments are served under ``/attachments/``. Components are checked
by ``tests.fakes.discord_components``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes import discord_payloads as p
from tests.fakes.discord_components import checked_components
from tests.fakes.discord_payloads import APPLICATION_ID, BOT_USER, DEFAULT_USER, GUILD_ID, Json

API_PREFIX = "/api/v10"


@dataclass(frozen=True, slots=True)
class ApiRequest:
    """One REST request as received: ``path`` is without ``/api/v10``."""

    method: str
    path: str
    query: dict[str, str]
    json: Any


@dataclass(frozen=True, slots=True)
class SentMessage:
    """A message the bot created or edited.

    ``via`` is ``"channel"`` (POST /channels/{id}/messages), ``"interaction"`` (a type 4
    callback), ``"followup"`` (POST /webhooks/...) or ``"edit"`` (PATCH of a message);
    ``at`` is when the fake handled it (``time.monotonic()``), to check pacing.
    """

    id: str
    channel_id: str
    content: str
    reference_id: str | None
    via: str
    interaction_id: str | None
    files: list[tuple[str, bytes]] = field(default_factory=list)
    payload: Json = field(default_factory=dict)
    at: float = 0.0


@dataclass(frozen=True, slots=True)
class InteractionResponse:
    """An accepted interaction callback (type 4 message, 5 deferred, ...)."""

    interaction_id: str
    type: int
    content: str  # "" when the callback carried none (a deferral)
    seconds_after_dispatch: float
    flags: int = 0  # 64: ephemeral, seen only by the user who invoked the command


@dataclass(slots=True)
class Failure:
    """A failure injected by ``FakeDiscord.fail``."""

    method: str
    pattern: re.Pattern[str]
    status: int
    remaining: int
    retry_after: float
    code: int
    message: str
    after_handling: bool = False


@dataclass(slots=True)
class Interaction:
    """A dispatched interaction and how the bot has answered it so far."""

    payload: Json
    dispatched_at: float
    response_type: int | None = None
    original_id: str | None = None
    original_loading: bool = False


def _path_of(request: Request) -> str:
    return request.url.path.removeprefix(API_PREFIX)


class RestMixin:
    """FakeDiscord's REST API: ``_rest_routes`` and the handlers behind them.

    The state below is set up by ``FakeDiscord.__init__``.
    """

    # settings and the world
    token: str
    interaction_deadline: float
    channels: dict[str, Json]
    messages: dict[str, list[Json]]
    users: dict[str, Json]
    member_roles: dict[str, list[str]]
    attachments: dict[str, tuple[bytes, str]]
    interactions: dict[str, Interaction]
    # what the bot did
    requests: list[ApiRequest]
    sent: list[SentMessage]
    deleted: list[tuple[str, str]]
    typing: list[str]
    commands: list[Json]
    guild_commands: dict[str, list[Json]]
    commands_version: int
    responses: list[InteractionResponse]
    # machinery
    _failures: list[Failure]
    _nonces: dict[tuple[str, str], Json]

    if TYPE_CHECKING:  # provided by FakeDiscord and GatewayMixin

        @property
        def gateway_url(self) -> str: ...

        def _notify(self) -> None: ...

        def _dispatch(self, event: str, data: Json) -> None: ...

        def dm_channel(self, user: Json) -> Json: ...

        def _find_message(self, channel_id: str, message_id: str) -> Json | None: ...

        def _reference_to(self, channel_id: str, message_id: str) -> Json: ...

        def _store(self, message: Json) -> None: ...

        def _store_attachment(
            self, channel_id: str, filename: str, data: bytes, kind: str
        ) -> Json: ...

        def _build_message(
            self,
            message_id: str,
            channel: Json,
            author: Json,
            content: str,
            *,
            mentions: list[Json] | None = None,
            attachments: list[Json] | None = None,
            embeds: list[Json] | None = None,
            reference: Json | None = None,
            interaction: bool = False,
            flags: int = 0,
        ) -> Json: ...

    # -- routing ----------------------------------------------------------------------------

    def _rest_routes(self) -> list[Route]:
        """The API routes and ``/attachments/``; the gateway socket is FakeDiscord's."""
        bot = self._bot_route
        hook = self._webhook_route
        api: list[tuple[str, Callable[..., Awaitable[Any]], list[str]]] = [
            ("/users/@me", bot(self._get_me), ["GET"]),
            ("/oauth2/applications/@me", bot(self._get_application), ["GET"]),
            ("/gateway", bot(self._get_gateway), ["GET"]),
            ("/gateway/bot", bot(self._get_gateway), ["GET"]),
            ("/users/@me/channels", bot(self._open_dm), ["POST"]),
            ("/channels/{channel_id}", bot(self._get_channel), ["GET"]),
            ("/guilds/{guild_id}/members/{user_id}", bot(self._guild_member), ["GET"]),
            ("/channels/{channel_id}/typing", bot(self._trigger_typing), ["POST"]),
            ("/channels/{channel_id}/messages", bot(self._channel_messages), ["GET", "POST"]),
            (
                "/channels/{channel_id}/messages/{message_id}",
                bot(self._channel_message),
                ["GET", "PATCH", "DELETE"],
            ),
            ("/applications/{app_id}/commands", bot(self._commands), ["GET", "PUT", "POST"]),
            (
                "/applications/{app_id}/guilds/{guild_id}/commands",
                bot(self._commands),
                ["GET", "PUT", "POST"],
            ),
            ("/interactions/{interaction_id}/{token}/callback", hook(self._callback), ["POST"]),
            ("/webhooks/{app_id}/{token}", hook(self._followup), ["POST"]),
            (
                "/webhooks/{app_id}/{token}/messages/{message_id}",
                hook(self._webhook_message),
                ["GET", "PATCH"],
            ),
        ]
        routes = [
            Route(API_PREFIX + path, endpoint, methods=methods) for path, endpoint, methods in api
        ]
        routes.append(Route("/attachments/{key:path}", self._download, methods=["GET"]))
        return routes

    def _bot_route(
        self, handler: Callable[[Request, Any], Awaitable[Any]]
    ) -> Callable[[Request], Awaitable[Response]]:
        return self._endpoint(handler, authenticated=True)

    def _webhook_route(
        self, handler: Callable[[Request, Any], Awaitable[Any]]
    ) -> Callable[[Request], Awaitable[Response]]:
        return self._endpoint(handler, authenticated=False)  # interaction tokens are the auth

    def _endpoint(
        self, handler: Callable[[Request, Any], Awaitable[Any]], *, authenticated: bool
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                return await self._serve(request, handler, authenticated=authenticated)
            finally:
                self._notify()

        return endpoint

    async def _serve(
        self,
        request: Request,
        handler: Callable[[Request, Any], Awaitable[Any]],
        *,
        authenticated: bool,
    ) -> Response:
        body, files = await _decode_body(request)
        path = _path_of(request)
        self.requests.append(ApiRequest(request.method, path, dict(request.query_params), body))
        self._notify()
        if authenticated and request.headers.get("authorization") != f"Bot {self.token}":
            return JSONResponse(p.error_body(0, "401: Unauthorized"), status_code=401)
        injected = self._injected(request.method, path)
        if injected is not None:
            return injected
        try:
            result = await handler(request, (body, files))
        except p.ApiError as error:
            return JSONResponse(error.body, status_code=error.status)
        lost = self._injected(request.method, path, after=True)
        if lost is not None:
            return lost
        if result is None:
            return Response(status_code=204)
        return JSONResponse(result)

    def _injected(self, method: str, path: str, *, after: bool = False) -> Response | None:
        for failure in self._failures:
            wanted = failure.remaining and failure.method in (method, "*")
            wanted = wanted and failure.after_handling == after
            if wanted and failure.pattern.fullmatch(path):
                failure.remaining -= 1
                return _failure_response(failure)
        return None

    # -- handlers ---------------------------------------------------------------------------

    async def _download(self, request: Request) -> Response:
        stored = self.attachments.get(request.path_params["key"])
        if stored is None:
            return JSONResponse(p.error_body(0, "404: Not Found"), status_code=404)
        data, kind = stored
        return Response(data, media_type=kind)

    async def _get_me(self, request: Request, body: Any) -> Json:
        return BOT_USER

    async def _get_application(self, request: Request, body: Any) -> Json:
        return p.application(self.users[DEFAULT_USER["id"]])

    async def _get_gateway(self, request: Request, body: Any) -> Json:
        return p.gateway_bot(self.gateway_url)

    async def _open_dm(self, request: Request, body: Any) -> Json:
        payload, _ = body
        user = self.users.get(str((payload or {}).get("recipient_id")))
        if user is None or user.get("bot"):
            raise p.ApiError(400, *p.INVALID_RECIPIENTS)
        return self.dm_channel(user)

    def _channel(self, request: Request) -> Json:
        channel = self.channels.get(request.path_params["channel_id"])
        if channel is None:
            raise p.ApiError(404, *p.UNKNOWN_CHANNEL)
        return channel

    async def _get_channel(self, request: Request, body: Any) -> Json:
        return self._channel(request)

    async def _trigger_typing(self, request: Request, body: Any) -> None:
        channel = self._channel(request)
        self.typing.append(channel["id"])

    async def _channel_messages(self, request: Request, body: Any) -> Any:
        channel = self._channel(request)
        if request.method == "GET":
            return p.history_page(self.messages[channel["id"]], request.query_params)
        if channel["type"] == p.GUILD_FORUM:
            raise p.ApiError(400, *p.NON_TEXT_CHANNEL)
        payload, files = body
        payload = payload or {}
        nonce = str(payload.get("nonce") or "")
        if nonce and payload.get("enforce_nonce"):
            earlier = self._nonces.get((channel["id"], nonce))
            if earlier is not None:
                return earlier  # Discord answers a repeated enforced nonce with the first message
        message = self._bot_message(channel, payload, files)
        if nonce:
            self._nonces[(channel["id"], nonce)] = message
        self._record_sent(message, "channel", None, files, payload)
        return message

    async def _guild_member(self, request: Request, body: Any) -> Any:
        user = self.users.get(request.path_params["user_id"])
        if request.path_params["guild_id"] != GUILD_ID or user is None:
            raise p.ApiError(404, 10007, "Unknown Member")
        return p.member(self.member_roles.get(user["id"], []), user=user)

    async def _channel_message(self, request: Request, body: Any) -> Any:
        channel = self._channel(request)
        message = self._find_message(channel["id"], request.path_params["message_id"])
        if message is None:
            raise p.ApiError(404, *p.UNKNOWN_MESSAGE)
        if request.method == "GET":
            return message
        if request.method == "DELETE":
            self._remove(message)
            self.deleted.append((channel["id"], message["id"]))
            return None
        payload, files = body
        return self._edit(message, payload or {}, files, None)

    def _remove(self, message: Json) -> None:
        """Take ``message`` out of its channel and dispatch MESSAGE_DELETE."""
        self.messages[message["channel_id"]].remove(message)
        delete = {"id": message["id"], "channel_id": message["channel_id"]}
        if "guild_id" in message:
            delete["guild_id"] = message["guild_id"]
        self._dispatch("MESSAGE_DELETE", delete)

    def _edit(
        self,
        message: Json,
        payload: Json,
        files: list[tuple[str, bytes]],
        interaction_id: str | None,
    ) -> Json:
        if message["author"]["id"] != BOT_USER["id"]:
            raise p.ApiError(403, 50005, "Cannot edit a message authored by another user")
        if "content" in payload:
            content = payload["content"] or ""
            if len(content) > p.MAX_CONTENT:
                raise p.invalid(
                    "content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length."
                )
            message["content"] = content
        if "embeds" in payload:
            message["embeds"] = payload["embeds"] or []
        if "components" in payload:
            message["components"] = checked_components(payload)
        message["flags"] = int(message.get("flags", 0)) & ~128  # no longer loading
        message["edited_timestamp"] = p.iso(p.snowflake_time(p.new_snowflake()))
        self._dispatch("MESSAGE_UPDATE", message)
        self._record_sent(message, "edit", interaction_id, files, payload)
        return message

    def _bot_message(
        self,
        channel: Json,
        payload: Json,
        files: list[tuple[str, bytes]],
        *,
        interaction: bool = False,
    ) -> Json:
        """Validate a message body as Discord does, then store and dispatch it."""
        content = payload.get("content") or ""
        if len(content) > p.MAX_CONTENT:
            raise p.invalid("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
        embeds = payload.get("embeds") or []
        components = checked_components(payload)
        if not (content or files or embeds or components or payload.get("sticker_ids")):
            raise p.ApiError(400, *p.EMPTY_MESSAGE)
        reference = self._bot_reference(channel, payload.get("message_reference"))
        attachments = [
            self._store_attachment(channel["id"], name, data, "application/octet-stream")
            for name, data in files
        ]
        message = self._build_message(
            p.new_snowflake(),
            channel,
            BOT_USER,
            content,
            attachments=attachments,
            embeds=embeds,
            reference=reference,
            interaction=interaction,
            flags=int(payload.get("flags") or 0),
        )
        message["components"] = components
        self._store(message)
        self._dispatch("MESSAGE_CREATE", message)
        return message

    def _bot_reference(self, channel: Json, reference: Json | None) -> Json | None:
        if not reference:
            return None
        channel_id = str(reference.get("channel_id") or channel["id"])
        message_id = str(reference.get("message_id"))
        if self._find_message(channel_id, message_id) is None:
            if reference.get("fail_if_not_exists", True):
                raise p.invalid(
                    "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message"
                )
            return None
        return self._reference_to(channel_id, message_id)

    def _record_sent(
        self,
        message: Json,
        via: str,
        interaction_id: str | None,
        files: list[tuple[str, bytes]],
        payload: Json,
    ) -> None:
        reference = message.get("message_reference") or {}
        self.sent.append(
            SentMessage(
                id=message["id"],
                channel_id=message["channel_id"],
                content=message["content"],
                reference_id=reference.get("message_id"),
                via=via,
                interaction_id=interaction_id,
                files=list(files),
                payload=payload,
                at=time.monotonic(),
            )
        )

    async def _commands(self, request: Request, body: Any) -> Any:
        if request.path_params["app_id"] != APPLICATION_ID:
            raise p.ApiError(403, 50001, "Missing Access")
        guild_id = request.path_params.get("guild_id")
        current = self.commands if guild_id is None else self.guild_commands.get(guild_id, [])
        if request.method == "GET":
            return current
        payload, _ = body
        if request.method == "PUT":
            registered = [self._register(spec, current, guild_id) for spec in payload or []]
        else:
            new = self._register(payload or {}, current, guild_id)
            registered = [c for c in current if c["name"] != new["name"]] + [new]
        if guild_id is None:
            self.commands = registered
            self.commands_version += 1
        else:
            self.guild_commands[guild_id] = registered
        return registered if request.method == "PUT" else registered[-1]

    @staticmethod
    def _register(spec: Json, current: list[Json], guild_id: str | None) -> Json:
        name = spec.get("name")
        if (
            not isinstance(name, str)
            or not re.fullmatch(r"[-_\w]{1,32}", name)
            or name.lower() != name
        ):
            raise p.invalid("name", "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
        same = next((c for c in current if c["name"] == name), None)
        command_id = same["id"] if same is not None else p.new_snowflake()
        return p.application_command(spec, command_id, guild_id=guild_id)

    def _interaction(self, interaction_id: str, token: str) -> Interaction:
        found = self.interactions.get(interaction_id)
        if found is None or found.payload["token"] != token:
            raise p.ApiError(404, *p.UNKNOWN_INTERACTION)
        return found

    async def _callback(self, request: Request, body: Any) -> Any:
        interaction_id = request.path_params["interaction_id"]
        found = self._interaction(interaction_id, request.path_params["token"])
        elapsed = time.monotonic() - found.dispatched_at
        if found.response_type is not None:
            raise p.ApiError(400, *p.ALREADY_ACKNOWLEDGED)
        if elapsed > self.interaction_deadline:
            raise p.ApiError(404, *p.UNKNOWN_INTERACTION)
        payload, files = body
        response_type = int((payload or {}).get("type", 0))
        data: Json = (payload or {}).get("data") or {}
        channel = self.channels[found.payload["channel_id"]]
        resource: Json = {"type": response_type}
        if response_type == 4:
            message = self._bot_message(channel, data, files, interaction=True)
            self._record_sent(message, "interaction", interaction_id, files, data)
            found.original_id = message["id"]
            resource["message"] = message
        elif response_type in (6, 7):
            message = self._component_message(found)
            if response_type == 7:  # the message the button is under, edited in place
                message = self._edit(message, data, files, interaction_id)
                resource["message"] = message
            found.original_id = message["id"]
        elif response_type == 5:
            loading = self._build_message(
                p.new_snowflake(), channel, BOT_USER, "", interaction=True, flags=128
            )
            self._store(loading)
            found.original_id = loading["id"]
            found.original_loading = True
        found.response_type = response_type
        self.responses.append(
            InteractionResponse(
                interaction_id,
                response_type,
                data.get("content") or "",
                elapsed,
                int(data.get("flags") or 0),
            )
        )
        if request.query_params.get("with_response") not in ("1", "true", "True"):
            return None
        return {
            "interaction": {
                "id": interaction_id,
                "type": found.payload["type"],
                "response_message_id": found.original_id,
                "response_message_loading": response_type == 5,
                "response_message_ephemeral": bool(int(data.get("flags") or 0) & 64),
            },
            "resource": resource,
        }

    def _component_message(self, found: Interaction) -> Json:
        """The message whose button was clicked (types 6 and 7 answer only those)."""
        if found.payload["type"] != 3:
            raise p.invalid("type", "INTERACTION_CALLBACK_TYPE_INVALID", "Invalid callback type")
        message = self._find_message(found.payload["channel_id"], found.payload["message"]["id"])
        if message is None:
            raise p.ApiError(404, *p.UNKNOWN_MESSAGE)
        return message

    def _webhook_interaction(self, request: Request) -> Interaction:
        token = request.path_params["token"]
        if request.path_params["app_id"] != APPLICATION_ID:
            raise p.ApiError(404, *p.UNKNOWN_WEBHOOK)
        found = next((i for i in self.interactions.values() if i.payload["token"] == token), None)
        if found is None or found.response_type is None:
            raise p.ApiError(404, *p.UNKNOWN_WEBHOOK)
        return found

    async def _followup(self, request: Request, body: Any) -> Any:
        found = self._webhook_interaction(request)
        payload, files = body
        interaction_id = found.payload["id"]
        channel = self.channels[found.payload["channel_id"]]
        original = self._find_message(channel["id"], found.original_id or "")
        if found.original_loading and original is not None:
            # The first followup after a deferral replaces the "thinking" message.
            found.original_loading = False
            message = self._edit(original, payload or {}, files, interaction_id)
            self.sent[-1] = dataclasses.replace(self.sent[-1], via="followup")
        else:
            message = self._bot_message(channel, payload or {}, files, interaction=True)
            self._record_sent(message, "followup", interaction_id, files, payload or {})
        wait = request.query_params.get("wait", "false").lower() in ("1", "true")
        return message if wait else None

    async def _webhook_message(self, request: Request, body: Any) -> Any:
        found = self._webhook_interaction(request)
        message_id = request.path_params["message_id"]
        if message_id == "@original":
            message_id = found.original_id or ""
        message = self._find_message(found.payload["channel_id"], message_id)
        if message is None:
            raise p.ApiError(404, *p.UNKNOWN_MESSAGE)
        if request.method == "GET":
            return message
        payload, files = body
        found.original_loading = False
        return self._edit(message, payload or {}, files, found.payload["id"])


def _failure_response(failure: Failure) -> Response:
    if failure.status != 429:
        return JSONResponse(p.error_body(failure.code, failure.message), status_code=failure.status)
    headers = {
        "Retry-After": str(max(1, round(failure.retry_after))),
        "X-RateLimit-Limit": "5",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": f"{time.time() + failure.retry_after:.3f}",
        "X-RateLimit-Reset-After": f"{failure.retry_after:.3f}",
        "X-RateLimit-Bucket": "fakebucket",
        "X-RateLimit-Scope": "user",
        "Via": "1.1 google",
    }
    body = {
        "message": "You are being rate limited.",
        "retry_after": failure.retry_after,
        "global": False,
        "code": failure.code,
    }
    return JSONResponse(body, status_code=429, headers=headers)


async def _decode_body(request: Request) -> tuple[Any, list[tuple[str, bytes]]]:
    """The JSON body (or ``payload_json`` of a multipart body) and any uploaded files."""
    raw = await request.body()
    if not raw:
        return None, []
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        return p.parse_multipart(content_type, raw)
    return json.loads(raw), []
