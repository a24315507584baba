"""A fake Discord (REST API and gateway WebSocket) on 127.0.0.1 for driving discord.py in tests.

Point the real library at it and script the world from the test::

    async with FakeDiscord() as fake:
        monkeypatch.setattr(discord.http.Route, "BASE", fake.api_base)
        monkeypatch.setattr(
            discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(fake.gateway_url)
        )
        ...  # the code under test logs in and connects with DEFAULT_TOKEN
        await fake.wait_ready()
        fake.post(GENERAL_ID, "hello", mention_bot=True)
        [reply] = await fake.wait_sent(1)

The world is one guild (``GUILD_ID``) with a text channel ``general`` (``GENERAL_ID``),
the bot (``BOT_USER``) and a human (``DEFAULT_USER``); tests add channels, threads,
roles, DM channels and messages. Messages go into channel history and are dispatched
as ``MESSAGE_CREATE`` to the live gateway session, filtered by the session's intents
(and with content blanked without ``MESSAGE_CONTENT``, as Discord does).

Gateway (``/gateway``): HELLO, HEARTBEAT/ACK, IDENTIFY (READY then GUILD_CREATE), RESUME
(replays the events the client missed, then RESUMED), INVALID_SESSION, per-session
sequence numbers; a newer socket replaces an older one. Frames are plain JSON text:
discord.py only decompresses binary frames.

REST (``/api/v10``, ``Authorization: Bot <token>``): login, gateway discovery, channels,
messages (send with Discord's validation, history, fetch, edit, delete), typing, DMs,
application commands (global and guild), interaction callbacks, followups and
``@original``. Attachments are served under ``/attachments/``.

Everything is recorded (``requests``, ``sent``, ``typing``, ``commands``, ``responses``,
``identifies``, ``resumes``); ``wait_*`` helpers wake on events, never by sleeping.
Faults: ``drop_connection``, ``invalidate_sessions``, ``deaf``, ``ack_heartbeats``,
``refuse_connections``, ``fail`` (REST errors, including 429 with Discord's headers) and
``interaction_deadline`` (Discord's 3 seconds, shorter in tests).

The server itself is a ``tests.fakes.loopback.LoopbackServer``.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import itertools
import json
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from tests.fakes import discord_payloads as p
from tests.fakes.discord_payloads import (
    APPLICATION_ID,
    BOT_USER,
    DEFAULT_TOKEN,
    DEFAULT_USER,
    GENERAL_ID,
    GUILD_ID,
    Json,
    make_user,
)
from tests.fakes.loopback import LoopbackServer

__all__ = [
    "APPLICATION_ID",
    "BOT_USER",
    "DEFAULT_TOKEN",
    "DEFAULT_USER",
    "GENERAL_ID",
    "GUILD_ID",
    "ApiRequest",
    "FakeDiscord",
    "InteractionResponse",
    "Json",
    "SentMessage",
    "make_user",
]

API_PREFIX = "/api/v10"

# Gateway intents (https://discord.com/developers/docs/events/gateway#gateway-intents).
INTENT_GUILDS = 1 << 0
INTENT_GUILD_MESSAGES = 1 << 9
INTENT_DIRECT_MESSAGES = 1 << 12
INTENT_MESSAGE_CONTENT = 1 << 15
_GUILD_EVENTS = frozenset({"CHANNEL_CREATE", "THREAD_CREATE", "GUILD_ROLE_CREATE"})
_MESSAGE_EVENTS = frozenset({"MESSAGE_CREATE", "MESSAGE_UPDATE", "MESSAGE_DELETE"})

UNKNOWN_CHANNEL = (10003, "Unknown Channel")
UNKNOWN_MESSAGE = (10008, "Unknown Message")
UNKNOWN_WEBHOOK = (10015, "Unknown Webhook")
UNKNOWN_INTERACTION = (10062, "Unknown interaction")
ALREADY_ACKNOWLEDGED = (40060, "Interaction has already been acknowledged.")
EMPTY_MESSAGE = (50006, "Cannot send an empty message")
NON_TEXT_CHANNEL = (50008, "Cannot send messages in a non-text channel")
INVALID_RECIPIENTS = (50033, "Invalid Recipient(s)")
INVALID_FORM_BODY = (50035, "Invalid Form Body")


class ApiError(Exception):
    """A Discord error answer, raised inside a handler and turned into the JSON body."""

    def __init__(self, status: int, code: int, message: str, *, errors: Json | None = None) -> None:
        super().__init__(f"{status} {code} {message}")
        self.status = status
        self.body = p.error_body(code, message, errors)


def _invalid(field_name: str, code: str, text: str) -> ApiError:
    return ApiError(400, *INVALID_FORM_BODY, errors=p.field_error(field_name, code, text))


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
    callback), ``"followup"`` (POST /webhooks/...) or ``"edit"`` (PATCH of a message).
    """

    id: str
    channel_id: str
    content: str
    reference_id: str | None
    via: str
    interaction_id: str | None
    files: list[tuple[str, bytes]] = field(default_factory=list)
    payload: Json = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class InteractionResponse:
    """An accepted interaction callback (type 4 message, 5 deferred, ...)."""

    interaction_id: str
    type: int
    content: str  # "" when the callback carried none (a deferral)
    seconds_after_dispatch: float
    flags: int = 0  # 64: ephemeral, seen only by the user who invoked the command


@dataclass(slots=True)
class _Failure:
    method: str
    pattern: re.Pattern[str]
    status: int
    remaining: int
    retry_after: float
    code: int
    message: str
    after_handling: bool = False


@dataclass(slots=True)
class _Interaction:
    payload: Json
    dispatched_at: float
    response_type: int | None = None
    original_id: str | None = None
    original_loading: bool = False


@dataclass(frozen=True, slots=True)
class _Close:
    code: int


@dataclass(eq=False, slots=True)
class _Connection:
    """One gateway socket; only its writer task sends, everything else queues."""

    websocket: WebSocket
    outbox: asyncio.Queue[Json | _Close] = field(default_factory=asyncio.Queue)
    session: _Session | None = None
    closing: bool = False
    finished: asyncio.Event = field(default_factory=asyncio.Event)

    def send(self, payload: Json) -> None:
        if not self.closing:
            self.outbox.put_nowait(payload)

    def close(self, code: int) -> None:
        if not self.closing:
            self.closing = True
            self.outbox.put_nowait(_Close(code))


@dataclass(eq=False, slots=True)
class _Session:
    session_id: str
    intents: int
    shard: list[int] | None
    seq: int = 0
    events: list[Json] = field(default_factory=list)  # every dispatch, for RESUME replay
    conn: _Connection | None = None
    valid: bool = True


def _path_of(request: Request) -> str:
    return request.url.path.removeprefix(API_PREFIX)


class FakeDiscord:
    """A scripted Discord REST API and gateway; use as ``async with``.

    ``heartbeat_interval`` is in seconds (HELLO carries milliseconds); ``token`` is the
    only bot token accepted. ``interaction_deadline`` (seconds, default 3.0 as on
    Discord) bounds how late an interaction callback may arrive.
    """

    def __init__(self, *, heartbeat_interval: float = 41.25, token: str = DEFAULT_TOKEN) -> None:
        self.heartbeat_interval = heartbeat_interval
        self.token = token
        self.interaction_deadline = 3.0
        self.ack_heartbeats = True
        self.refuse_connections = False
        # the world
        self.channels: dict[str, Json] = {
            GENERAL_ID: p.guild_channel(GENERAL_ID, "general", p.GUILD_TEXT, 0)
        }
        self.messages: dict[str, list[Json]] = {GENERAL_ID: []}
        self.roles: dict[str, Json] = {
            GUILD_ID: p.role(GUILD_ID, "@everyone", 0, p.EVERYONE_PERMISSIONS)
        }
        self.member_roles: dict[str, list[str]] = {}
        self.users: dict[str, Json] = {DEFAULT_USER["id"]: DEFAULT_USER, BOT_USER["id"]: BOT_USER}
        self.attachments: dict[str, tuple[bytes, str]] = {}
        self._dm_channels: dict[str, str] = {}  # user id -> channel id
        # what the bot did
        self.sent: list[SentMessage] = []
        self.typing: list[str] = []
        self.commands: list[Json] = []
        self.guild_commands: dict[str, list[Json]] = {}
        self.responses: list[InteractionResponse] = []
        self.requests: list[ApiRequest] = []
        self.interactions: dict[str, _Interaction] = {}
        self.identifies = 0
        self.resumes = 0
        self.heartbeats = 0
        self.refused = 0
        self.ready_count = 0
        self.resumed_count = 0
        self.commands_version = 0
        # machinery
        self._failures: list[_Failure] = []
        self._nonces: dict[tuple[str, str], Json] = {}
        # Whether the bot's owner switched on the privileged Message Content intent.
        self.message_content_enabled = True
        self.member_requests = 0
        self._in_flight = 0  # REST requests being handled right now
        self._session: _Session | None = None
        self._connections: set[_Connection] = set()
        self._deaf_conn: _Connection | None = None
        self._changed = asyncio.Event()
        self._positions = itertools.count(1)
        self._server = LoopbackServer(Starlette(routes=self._routes()))

    # -- addresses and lifecycle --------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return self._server.url

    @property
    def api_base(self) -> str:
        """What ``discord.http.Route.BASE`` should be."""
        return f"{self._server.url}{API_PREFIX}"

    @property
    def gateway_url(self) -> str:
        """What ``DiscordWebSocket.DEFAULT_GATEWAY`` should be (also the resume URL)."""
        return f"ws://127.0.0.1:{self._server.port}/gateway"

    def gateway_env(self, **extra: str) -> dict[str, str]:
        """Environment variables that point chatgate's Discord adapter at this fake."""
        return {
            "DISCORD_BOT_TOKEN": self.token,
            "CHATGATE_DISCORD_API_BASE": self.api_base,
            "CHATGATE_DISCORD_GATEWAY_URL": self.gateway_url,
            **extra,
        }

    async def __aenter__(self) -> Self:
        await self._server.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        connections = list(self._connections)
        for conn in connections:
            conn.close(1001)
        for conn in connections:
            await conn.finished.wait()
        await self._server.stop()

    # -- recorded state -----------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Whether a gateway socket is open and identified or resumed."""
        return self._session is not None and self._session.conn is not None

    @property
    def history_requests(self) -> list[ApiRequest]:
        """``GET /channels/{id}/messages`` calls, in order."""
        pattern = re.compile(r"/channels/\d+/messages")
        return [r for r in self.requests if r.method == "GET" and pattern.fullmatch(r.path)]

    def requests_to(self, method: str, path_suffix: str) -> list[ApiRequest]:
        """Recorded requests with this method whose path ends with ``path_suffix``."""
        return [r for r in self.requests if r.method == method and r.path.endswith(path_suffix)]

    def sent_to(self, channel_id: str) -> list[SentMessage]:
        """What the bot sent to one channel, in order."""
        return [message for message in self.sent if message.channel_id == channel_id]

    def history(self, channel_id: str) -> list[Json]:
        """A channel's messages, oldest first."""
        return list(self.messages.get(channel_id, []))

    # -- waiting --------------------------------------------------------------------------

    async def wait_until(
        self,
        predicate: Callable[[], bool],
        *,
        timeout: float = 10.0,  # noqa: ASYNC109
        what: str = "condition",
    ) -> None:
        """Return once ``predicate()`` holds; re-checked whenever the fake's state changes."""
        try:
            async with asyncio.timeout(timeout):
                while not predicate():
                    await self._changed.wait()
        except TimeoutError:
            calls = [f"{r.method} {r.path}" for r in self.requests]
            raise TimeoutError(
                f"fake Discord: timed out after {timeout}s waiting for {what}; "
                f"identifies={self.identifies} resumes={self.resumes} requests={calls}"
            ) from None

    async def wait_sent(self, n: int = 1, *, timeout: float = 10.0) -> list[SentMessage]:  # noqa: ASYNC109
        """The first ``n`` sent messages, once there are ``n``."""
        await self.wait_until(lambda: len(self.sent) >= n, timeout=timeout, what=f"{n} sends")
        return self.sent[:n]

    async def wait_typing(self, n: int = 1, *, timeout: float = 10.0) -> list[str]:  # noqa: ASYNC109
        """The channel ids of the first ``n`` typing calls."""
        await self.wait_until(lambda: len(self.typing) >= n, timeout=timeout, what=f"{n} typing")
        return self.typing[:n]

    async def wait_commands(self, *, timeout: float = 10.0) -> list[Json]:  # noqa: ASYNC109
        """The global commands, once the bot has registered any (PUT or POST)."""
        await self.wait_until(
            lambda: self.commands_version > 0, timeout=timeout, what="command registration"
        )
        return self.commands

    async def wait_responses(
        self,
        n: int = 1,
        *,
        timeout: float = 10.0,  # noqa: ASYNC109
    ) -> list[InteractionResponse]:
        """The first ``n`` accepted interaction callbacks."""
        await self.wait_until(
            lambda: len(self.responses) >= n, timeout=timeout, what=f"{n} interaction responses"
        )
        return self.responses[:n]

    async def wait_until_quiet_after(
        self,
        predicate: Callable[[], bool],
        *,
        timeout: float = 10.0,  # noqa: ASYNC109
    ) -> None:
        """Return once ``predicate()`` holds and no REST request is being handled."""
        await self.wait_until(
            lambda: predicate() and self._in_flight == 0, timeout=timeout, what="quiet"
        )

    async def wait_ready(self, n: int = 1, *, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Return once ``n`` READY dispatches have been sent in total."""
        await self.wait_until(lambda: self.ready_count >= n, timeout=timeout, what=f"{n} READY")

    async def wait_resumed(self, n: int = 1, *, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Return once ``n`` RESUMED dispatches have been sent in total."""
        await self.wait_until(lambda: self.resumed_count >= n, timeout=timeout, what=f"{n} RESUMED")

    async def wait_refused(self, n: int = 1, *, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Return once ``n`` gateway upgrades have been refused in total."""
        await self.wait_until(lambda: self.refused >= n, timeout=timeout, what=f"{n} refusals")

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # -- the world --------------------------------------------------------------------------

    def add_channel(self, name: str, *, kind: str = "text") -> Json:
        """A guild channel (``kind`` "text" or "forum"); CHANNEL_CREATE if connected."""
        channel = p.guild_channel(
            p.new_snowflake(), name, p.CHANNEL_KINDS[kind], next(self._positions)
        )
        self.channels[channel["id"]] = channel
        self.messages[channel["id"]] = []
        self._dispatch("CHANNEL_CREATE", channel)
        return channel

    def create_thread(self, parent_id: str, name: str) -> Json:
        """A public thread under a text or forum channel; THREAD_CREATE if connected."""
        parent = self.channels[parent_id]
        if parent["type"] not in (p.GUILD_TEXT, p.GUILD_FORUM):
            raise ValueError(f"channel {parent_id} cannot hold threads")
        thread = p.thread_channel(p.new_snowflake(), parent_id, name, DEFAULT_USER["id"])
        self.channels[thread["id"]] = thread
        self.messages[thread["id"]] = []
        self._dispatch("THREAD_CREATE", {**thread, "newly_created": True})
        return thread

    def add_role(self, name: str) -> Json:
        """A guild role (GUILD_ROLE_CREATE if connected)."""
        new = p.role(p.new_snowflake(), name, len(self.roles))
        self.roles[new["id"]] = new
        self._dispatch("GUILD_ROLE_CREATE", {"guild_id": GUILD_ID, "role": new})
        return new

    def set_roles(self, user_id: str, role_ids: list[str]) -> None:
        """A member's roles, as sent in MESSAGE_CREATE ``member`` and interactions."""
        unknown = [role_id for role_id in role_ids if role_id not in self.roles]
        if unknown:
            raise KeyError(f"unknown roles {unknown}")
        self.member_roles[user_id] = list(role_ids)

    def dm_channel(self, user: Json) -> Json:
        """The DM channel (type 1) with ``user``, created on first use."""
        self.users.setdefault(user["id"], user)
        channel_id = self._dm_channels.get(user["id"])
        if channel_id is None:
            channel_id = p.new_snowflake()
            self._dm_channels[user["id"]] = channel_id
            self.channels[channel_id] = p.dm_channel(channel_id, user)
            self.messages[channel_id] = []
        return self.channels[channel_id]

    def post(
        self,
        channel_id: str,
        content: str,
        *,
        author: Json = DEFAULT_USER,
        mention_bot: bool = False,
        reply_to: str | None = None,
        attachments: Sequence[tuple[str, bytes, str]] = (),
    ) -> Json:
        """A message by ``author`` in a guild channel, thread or DM channel.

        Stored in the channel's history and dispatched as MESSAGE_CREATE. ``mention_bot``
        prefixes ``<@BOT_ID>``; ``reply_to`` makes it a reply to that message;
        ``attachments`` are (filename, data, content type), served by the fake.
        """
        channel = self.channels.get(channel_id)
        if channel is None:
            raise KeyError(f"unknown channel {channel_id}")
        self.users.setdefault(author["id"], author)
        if mention_bot:
            content = f"<@{BOT_USER['id']}> {content}"
        message_id = p.new_snowflake()
        files = [
            self._store_attachment(channel_id, name, data, kind) for name, data, kind in attachments
        ]
        reference: Json | None = None
        if reply_to is not None:
            reference = self._reference_to(channel_id, reply_to)
        message = self._build_message(
            message_id,
            channel,
            author,
            content,
            mentions=[BOT_USER] if mention_bot else [],
            attachments=files,
            reference=reference,
        )
        self._store(message)
        self._dispatch("MESSAGE_CREATE", message)
        return message

    def dm(self, content: str, *, author: Json = DEFAULT_USER, **kw: Any) -> Json:
        """``post()`` into ``author``'s DM channel with the bot."""
        channel = self.dm_channel(author)
        return self.post(channel["id"], content, author=author, **kw)

    def slash(
        self,
        name: str,
        options: Mapping[str, str] | None = None,
        *,
        channel_id: str | None = None,
        user: Json = DEFAULT_USER,
        dm: bool = False,
    ) -> Json:
        """Dispatch INTERACTION_CREATE for the registered command ``name``; returns it."""
        command = self._registered_command(name)
        self.users.setdefault(user["id"], user)
        data: Json = {
            "id": command["id"],
            "name": name,
            "type": command.get("type", 1),
            "options": p.command_options(command, dict(options or {})),
        }
        if "guild_id" in command:
            data["guild_id"] = command["guild_id"]
        channel = self.dm_channel(user) if dm else self.channels[channel_id or GENERAL_ID]
        payload: Json = {
            "id": p.new_snowflake(),
            "application_id": APPLICATION_ID,
            "type": 2,
            "data": data,
            "channel_id": channel["id"],
            "channel": copy.deepcopy(channel),
            "token": secrets.token_urlsafe(48),
            "version": 1,
            "app_permissions": p.EVERYONE_PERMISSIONS,
            "locale": "en-US",
            "entitlements": [],
            "attachment_size_limit": p.ATTACHMENT_SIZE_LIMIT,
        }
        if dm:
            payload.update(user=user, context=1, authorizing_integration_owners={"0": "0"})
        else:
            member = p.member(self.member_roles.get(user["id"], []), user=user)
            member["permissions"] = p.EVERYONE_PERMISSIONS
            payload.update(
                guild_id=GUILD_ID,
                guild={"id": GUILD_ID, "locale": "en-US", "features": []},
                guild_locale="en-US",
                member=member,
                context=0,
                authorizing_integration_owners={"0": GUILD_ID},
            )
        self.interactions[payload["id"]] = _Interaction(payload, time.monotonic())
        self._dispatch("INTERACTION_CREATE", payload)
        return payload

    def _registered_command(self, name: str) -> Json:
        candidates = [*self.commands, *itertools.chain(*self.guild_commands.values())]
        for command in candidates:
            if command["name"] == name:
                return command
        raise LookupError(f"no registered command named {name!r}")

    def _store_attachment(self, channel_id: str, filename: str, data: bytes, kind: str) -> Json:
        attachment_id = p.new_snowflake()
        key = f"{channel_id}/{attachment_id}/{filename}"
        self.attachments[key] = (data, kind)
        return p.attachment(attachment_id, filename, data, kind, f"{self.url}/attachments/{key}")

    def _find_message(self, channel_id: str, message_id: str) -> Json | None:
        return next((m for m in self.messages.get(channel_id, []) if m["id"] == message_id), None)

    def _reference_to(self, channel_id: str, message_id: str) -> Json:
        target = self._find_message(channel_id, message_id)
        if target is None:
            raise KeyError(f"no message {message_id} in channel {channel_id}")
        reference: Json = {"type": 0, "message_id": message_id, "channel_id": channel_id}
        if "guild_id" in target:
            reference["guild_id"] = target["guild_id"]
        return reference

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
    ) -> Json:
        in_guild = channel["type"] != p.DM
        referenced: Json | None = None
        if reference is not None:
            found = self._find_message(reference["channel_id"], reference["message_id"])
            referenced = {k: v for k, v in (found or {}).items() if k != "referenced_message"}
        mention_objects = [
            {**user, "member": self._member_of(user)} if in_guild else user
            for user in mentions or []
        ]
        if interaction:
            message_type = p.CHAT_INPUT_COMMAND
        else:
            message_type = p.REPLY if reference is not None else p.DEFAULT_MESSAGE
        return p.message(
            message_id,
            channel["id"],
            author,
            content,
            guild_id=GUILD_ID if in_guild else None,
            author_member=self._member_of(author) if in_guild else None,
            mentions=mention_objects,
            attachments=attachments,
            embeds=embeds,
            message_type=message_type,
            reference=reference,
            referenced=referenced,
            flags=flags,
            webhook_id=APPLICATION_ID if interaction else None,
        )

    def _member_of(self, user: Json) -> Json:
        return p.member(self.member_roles.get(user["id"], []))

    def _store(self, message: Json) -> None:
        channel = self.channels[message["channel_id"]]
        self.messages[channel["id"]].append(message)
        channel["last_message_id"] = message["id"]
        if channel["type"] == p.PUBLIC_THREAD:
            channel["message_count"] += 1
            channel["total_message_sent"] += 1

    # -- faults ---------------------------------------------------------------------------

    @property
    def deaf(self) -> bool:
        """While True the socket live when it was set gets no dispatches (they are lost)."""
        return self._deaf_conn is not None

    @deaf.setter
    def deaf(self, value: bool) -> None:
        session = self._session
        self._deaf_conn = session.conn if value and session is not None else None

    async def drop_connection(self, code: int = 4000) -> None:
        """Close the live socket server-side; the session stays resumable."""
        session = self._session
        conn = session.conn if session is not None else None
        if session is None or conn is None:
            return
        session.conn = None
        conn.close(code)
        await conn.finished.wait()

    def invalidate_sessions(self) -> None:
        """The next RESUME is answered with op 9 INVALID_SESSION (d=false)."""
        if self._session is not None:
            self._session.valid = False

    def fail(
        self,
        method: str,
        path_pattern: str,
        status: int,
        *,
        times: int = 1,
        retry_after: float | None = None,
        code: int = 0,
        message: str = "fake failure",
        after_handling: bool = False,
    ) -> None:
        """Answer the next ``times`` matching REST requests with a Discord error.

        With ``after_handling`` the request takes effect first (a message is created)
        and only its answer is lost, as when a proxy or the network fails on the way back.

        ``path_pattern`` must match the whole path without ``/api/v10``
        (``re.fullmatch``). 429 answers carry ``retry_after`` (default 0.05 s) in the body
        and in ``Retry-After``/``X-RateLimit-*`` headers, plus the ``Via`` header
        discord.py requires to tell Discord's 429s from Cloudflare bans.
        """
        self._failures.append(
            _Failure(
                method=method.upper(),
                pattern=re.compile(path_pattern),
                status=status,
                remaining=times,
                retry_after=0.05 if retry_after is None else retry_after,
                code=code,
                message=message,
                after_handling=after_handling,
            )
        )

    def _injected(self, method: str, path: str, *, after: bool = False) -> Response | None:
        for failure in self._failures:
            wanted = failure.remaining and failure.method in (method, "*")
            wanted = wanted and failure.after_handling == after
            if wanted and failure.pattern.fullmatch(path):
                failure.remaining -= 1
                return _failure_response(failure)
        return None

    # -- gateway --------------------------------------------------------------------------

    def _dispatch(self, event: str, data: Json) -> None:
        """Send a dispatch to the session: live socket, or buffered for RESUME."""
        session = self._session
        if session is None or not _wanted(session.intents, event, data):
            return
        conn = session.conn
        if conn is not None and conn is self._deaf_conn:
            return  # lost for this session, as if never sent
        session.seq += 1
        visible = _visible(session.intents, event, copy.deepcopy(data))
        payload = {"op": 0, "t": event, "s": session.seq, "d": visible}
        session.events.append(payload)
        if conn is not None:
            conn.send(payload)

    async def _gateway(self, websocket: WebSocket) -> None:
        if self.refuse_connections:
            self.refused += 1
            self._notify()
            await websocket.send_denial_response(
                JSONResponse(p.error_body(0, "503: Service Unavailable"), status_code=503)
            )
            return
        await websocket.accept()
        conn = _Connection(websocket)
        self._connections.add(conn)
        conn.send({"op": 10, "d": {"heartbeat_interval": int(self.heartbeat_interval * 1000)}})
        reader = asyncio.create_task(self._read(conn))
        writer = asyncio.create_task(self._write(conn))
        try:
            await asyncio.wait({reader, writer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reader, writer):
                task.cancel()
            await asyncio.gather(reader, writer, return_exceptions=True)
            self._connections.discard(conn)
            if conn.session is not None and conn.session.conn is conn:
                conn.session.conn = None
            if self._deaf_conn is conn:
                self._deaf_conn = None
            conn.finished.set()
            self._notify()

    async def _write(self, conn: _Connection) -> None:
        while True:
            item = await conn.outbox.get()
            if isinstance(item, _Close):
                await conn.websocket.close(item.code)
                return
            await conn.websocket.send_text(json.dumps(item))
            if item.get("t") == "READY":
                self.ready_count += 1
                self._notify()
            elif item.get("t") == "RESUMED":
                self.resumed_count += 1
                self._notify()

    async def _read(self, conn: _Connection) -> None:
        try:
            while True:
                frame = await conn.websocket.receive_text()
                self._on_frame(conn, json.loads(frame))
        except WebSocketDisconnect:
            return

    def _on_frame(self, conn: _Connection, frame: Json) -> None:
        op = frame.get("op")
        data = frame.get("d")
        if op == 1:
            self.heartbeats += 1
            if self.ack_heartbeats:
                conn.send({"op": 11})
        elif op == 2:
            self._identify(conn, data or {})
        elif op == 6:
            self._resume(conn, data or {})
        elif op == 8:
            self._request_members(data or {})
        elif op in (3, 4):
            pass  # presence and voice state: accepted and ignored
        else:
            conn.close(4001)  # unknown opcode
        self._notify()

    def _request_members(self, data: Json) -> None:
        """REQUEST_GUILD_MEMBERS by user ids (no privileged intent needed): one chunk."""
        self.member_requests += 1
        wanted = [str(u) for u in data.get("user_ids") or []]
        members = [
            p.member(self.member_roles.get(uid, []), user=self.users[uid])
            for uid in wanted
            if uid in self.users
        ]
        chunk: Json = {
            "guild_id": str(data.get("guild_id")),
            "members": members,
            "chunk_index": 0,
            "chunk_count": 1,
            "not_found": [u for u in wanted if u not in self.users],
        }
        if data.get("nonce") is not None:
            chunk["nonce"] = data["nonce"]
        self._dispatch("GUILD_MEMBERS_CHUNK", chunk)

    def _identify(self, conn: _Connection, data: Json) -> None:
        self.identifies += 1
        if data.get("token") != self.token:
            conn.close(4004)
            return
        if conn.session is not None:
            conn.close(4005)  # already authenticated
            return
        if (
            int(data.get("intents", 0)) & INTENT_MESSAGE_CONTENT
            and not self.message_content_enabled
        ):
            conn.close(4014)  # "Disallowed intent(s)": not switched on in the developer portal
            return
        session = _Session(secrets.token_hex(16), int(data.get("intents", 0)), data.get("shard"))
        self._take_over(session, conn)
        ready: Json = {
            "v": 10,
            "user": BOT_USER,
            "guilds": [{"id": GUILD_ID, "unavailable": True}],
            "session_id": session.session_id,
            "session_type": "normal",
            "resume_gateway_url": self.gateway_url,
            "application": {"id": APPLICATION_ID, "flags": 0},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "user_settings": {},
            "_trace": ["fake-discord"],
        }
        if session.shard is not None:
            ready["shard"] = session.shard
        self._dispatch("READY", ready)
        self._dispatch("GUILD_CREATE", self._guild_payload())

    def _resume(self, conn: _Connection, data: Json) -> None:
        self.resumes += 1
        if data.get("token") != self.token:
            conn.close(4004)
            return
        session = self._session
        if session is None or not session.valid or session.session_id != data.get("session_id"):
            conn.send({"op": 9, "d": False})
            return
        self._take_over(session, conn)
        seq = data.get("seq") or 0
        for event in session.events:
            if event["s"] > seq and event["t"] not in ("READY", "RESUMED"):
                conn.send(event)
        self._dispatch("RESUMED", {"_trace": ["fake-discord"]})

    def _take_over(self, session: _Session, conn: _Connection) -> None:
        for other in list(self._connections):
            if other is not conn and other.session is not None and not other.closing:
                other.close(4000)  # a newer socket replaces it
        if self._session is not None and self._session is not session:
            self._session.conn = None
        self._session = session
        session.conn = conn
        conn.session = session

    def _guild_payload(self) -> Json:
        channels = [c for c in self.channels.values() if c["type"] in p.CHANNEL_KINDS.values()]
        threads = [c for c in self.channels.values() if c["type"] == p.PUBLIC_THREAD]
        members = [p.member(self.member_roles.get(BOT_USER["id"], []), user=BOT_USER)]
        return copy.deepcopy(p.guild(channels, threads, list(self.roles.values()), members))

    # -- REST -----------------------------------------------------------------------------

    def _routes(self) -> list[Route | WebSocketRoute]:
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
        routes: list[Route | WebSocketRoute] = [
            Route(API_PREFIX + path, endpoint, methods=methods) for path, endpoint, methods in api
        ]
        routes.append(Route("/attachments/{key:path}", self._download, methods=["GET"]))
        routes.append(WebSocketRoute("/gateway", self._gateway))
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
            self._in_flight += 1
            try:
                return await self._serve(request, handler, authenticated=authenticated)
            finally:
                self._in_flight -= 1
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
        except ApiError as error:
            return JSONResponse(error.body, status_code=error.status)
        lost = self._injected(request.method, path, after=True)
        if lost is not None:
            return lost
        if result is None:
            return Response(status_code=204)
        return JSONResponse(result)

    async def _download(self, request: Request) -> Response:
        stored = self.attachments.get(request.path_params["key"])
        if stored is None:
            return JSONResponse(p.error_body(0, "404: Not Found"), status_code=404)
        data, kind = stored
        return Response(data, media_type=kind)

    async def _get_me(self, request: Request, body: Any) -> Json:
        return BOT_USER

    async def _get_application(self, request: Request, body: Any) -> Json:
        return {
            "id": APPLICATION_ID,
            "name": BOT_USER["username"],
            "description": "",
            "icon": None,
            "bot_public": True,
            "bot_require_code_grant": False,
            "owner": self.users[DEFAULT_USER["id"]],
            "team": None,
            "verify_key": "0" * 64,
            "flags": 0,
            "bot": BOT_USER,
            "summary": "",
            "interactions_endpoint_url": None,
        }

    async def _get_gateway(self, request: Request, body: Any) -> Json:
        return {
            "url": self.gateway_url,
            "shards": 1,
            "session_start_limit": {
                "total": 1000,
                "remaining": 999,
                "reset_after": 14_400_000,
                "max_concurrency": 1,
            },
        }

    async def _open_dm(self, request: Request, body: Any) -> Json:
        payload, _ = body
        user = self.users.get(str((payload or {}).get("recipient_id")))
        if user is None or user.get("bot"):
            raise ApiError(400, *INVALID_RECIPIENTS)
        return self.dm_channel(user)

    def _channel(self, request: Request) -> Json:
        channel = self.channels.get(request.path_params["channel_id"])
        if channel is None:
            raise ApiError(404, *UNKNOWN_CHANNEL)
        return channel

    async def _get_channel(self, request: Request, body: Any) -> Json:
        return self._channel(request)

    async def _trigger_typing(self, request: Request, body: Any) -> None:
        channel = self._channel(request)
        self.typing.append(channel["id"])

    async def _channel_messages(self, request: Request, body: Any) -> Any:
        channel = self._channel(request)
        if request.method == "GET":
            return _history_page(self.messages[channel["id"]], request.query_params)
        if channel["type"] == p.GUILD_FORUM:
            raise ApiError(400, *NON_TEXT_CHANNEL)
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
            raise ApiError(404, 10007, "Unknown Member")
        return p.member(self.member_roles.get(user["id"], []), user=user)

    async def _channel_message(self, request: Request, body: Any) -> Any:
        channel = self._channel(request)
        message = self._find_message(channel["id"], request.path_params["message_id"])
        if message is None:
            raise ApiError(404, *UNKNOWN_MESSAGE)
        if request.method == "GET":
            return message
        if request.method == "DELETE":
            self.messages[channel["id"]].remove(message)
            delete = {"id": message["id"], "channel_id": channel["id"]}
            if "guild_id" in message:
                delete["guild_id"] = message["guild_id"]
            self._dispatch("MESSAGE_DELETE", delete)
            return None
        payload, files = body
        return self._edit(message, payload or {}, files, None)

    def _edit(
        self,
        message: Json,
        payload: Json,
        files: list[tuple[str, bytes]],
        interaction_id: str | None,
    ) -> Json:
        if message["author"]["id"] != BOT_USER["id"]:
            raise ApiError(403, 50005, "Cannot edit a message authored by another user")
        if "content" in payload:
            content = payload["content"] or ""
            if len(content) > p.MAX_CONTENT:
                raise _invalid(
                    "content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length."
                )
            message["content"] = content
        if "embeds" in payload:
            message["embeds"] = payload["embeds"] or []
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
            raise _invalid("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
        embeds = payload.get("embeds") or []
        if not content and not files and not embeds and not payload.get("sticker_ids"):
            raise ApiError(400, *EMPTY_MESSAGE)
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
                raise _invalid(
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
            )
        )

    async def _commands(self, request: Request, body: Any) -> Any:
        if request.path_params["app_id"] != APPLICATION_ID:
            raise ApiError(403, 50001, "Missing Access")
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
            raise _invalid("name", "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
        same = next((c for c in current if c["name"] == name), None)
        command_id = same["id"] if same is not None else p.new_snowflake()
        return p.application_command(spec, command_id, guild_id=guild_id)

    def _interaction(self, interaction_id: str, token: str) -> _Interaction:
        found = self.interactions.get(interaction_id)
        if found is None or found.payload["token"] != token:
            raise ApiError(404, *UNKNOWN_INTERACTION)
        return found

    async def _callback(self, request: Request, body: Any) -> Any:
        interaction_id = request.path_params["interaction_id"]
        found = self._interaction(interaction_id, request.path_params["token"])
        elapsed = time.monotonic() - found.dispatched_at
        if found.response_type is not None:
            raise ApiError(400, *ALREADY_ACKNOWLEDGED)
        if elapsed > self.interaction_deadline:
            raise ApiError(404, *UNKNOWN_INTERACTION)
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

    def _webhook_interaction(self, request: Request) -> _Interaction:
        token = request.path_params["token"]
        if request.path_params["app_id"] != APPLICATION_ID:
            raise ApiError(404, *UNKNOWN_WEBHOOK)
        found = next((i for i in self.interactions.values() if i.payload["token"] == token), None)
        if found is None or found.response_type is None:
            raise ApiError(404, *UNKNOWN_WEBHOOK)
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
            raise ApiError(404, *UNKNOWN_MESSAGE)
        if request.method == "GET":
            return message
        payload, files = body
        found.original_loading = False
        return self._edit(message, payload or {}, files, found.payload["id"])


# -- helpers --------------------------------------------------------------------------------


def _wanted(intents: int, event: str, data: Json) -> bool:
    """Whether a session identified with ``intents`` receives ``event``."""
    if event in _GUILD_EVENTS:
        return bool(intents & INTENT_GUILDS)
    if event in _MESSAGE_EVENTS:
        flag = INTENT_GUILD_MESSAGES if "guild_id" in data else INTENT_DIRECT_MESSAGES
        return bool(intents & flag)
    return True


def _visible(intents: int, event: str, data: Json) -> Json:
    """Without MESSAGE_CONTENT, Discord blanks guild messages not addressed to the bot."""
    if event not in ("MESSAGE_CREATE", "MESSAGE_UPDATE") or intents & INTENT_MESSAGE_CONTENT:
        return data
    if "guild_id" not in data or data["author"]["id"] == BOT_USER["id"]:
        return data
    if any(user["id"] == BOT_USER["id"] for user in data.get("mentions", [])):
        return data
    return {**data, "content": "", "embeds": [], "attachments": [], "components": []}


def _history_page(messages: list[Json], query: Mapping[str, str]) -> list[Json]:
    """``GET /channels/{id}/messages``: up to ``limit`` messages, newest first."""
    try:
        limit = int(query.get("limit", "50"))
    except ValueError:
        raise _invalid("limit", "NUMBER_TYPE_COERCE", "Value is not int.") from None
    if not 1 <= limit <= 100:
        raise _invalid("limit", "NUMBER_TYPE_MAX", "int value should be between 1 and 100.")
    ordered = sorted(messages, key=lambda m: int(m["id"]))
    if "around" in query:
        pivot = int(query["around"])
        older = [m for m in ordered if int(m["id"]) < pivot][-(limit // 2) :] if limit > 1 else []
        newer = [m for m in ordered if int(m["id"]) >= pivot][: limit - len(older)]
        page = older + newer
    elif "after" in query:
        page = [m for m in ordered if int(m["id"]) > int(query["after"])][:limit]
    else:
        if "before" in query:
            ordered = [m for m in ordered if int(m["id"]) < int(query["before"])]
        page = ordered[-limit:]
    return list(reversed(page))


def _failure_response(failure: _Failure) -> Response:
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
