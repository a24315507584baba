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
application commands (global and guild), interaction callbacks (a message, a deferral,
and for buttons 6 and 7: acknowledge, or update the message), followups and
``@original``; message components (action rows of buttons) checked as Discord checks
them and kept on the message, ``click`` to press one. Attachments are served under
``/attachments/``.

Everything is recorded (``requests``, ``sent`` with edits and their times, ``deleted``,
``typing``, ``commands``, ``responses``, ``identifies``, ``resumes``); ``wait_*`` helpers
wake on events, never by sleeping. ``delete_message`` is someone else deleting one.
Faults: ``drop_connection``, ``invalidate_sessions``, ``deaf``, ``ack_heartbeats``,
``refuse_connections``, ``fail`` (REST errors, including 429 with Discord's headers) and
``interaction_deadline`` (Discord's 3 seconds, shorter in tests).

The server itself is a ``tests.fakes.loopback.LoopbackServer``. This module is the
facade (world-building and scripting API, waits, recorded state); the gateway side is
``tests.fakes.discord_gateway``, the REST side ``tests.fakes.discord_rest`` and the JSON
objects, error codes and history paging ``tests.fakes.discord_payloads``.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import re
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from starlette.applications import Starlette
from starlette.routing import WebSocketRoute

from tests.fakes import discord_payloads as p
from tests.fakes.discord_gateway import (
    INTENT_DIRECT_MESSAGES,
    INTENT_GUILD_MESSAGES,
    INTENT_GUILDS,
    INTENT_MESSAGE_CONTENT,
    GatewayMixin,
)
from tests.fakes.discord_payloads import (
    ALREADY_ACKNOWLEDGED,
    APPLICATION_ID,
    BOT_USER,
    DEFAULT_TOKEN,
    DEFAULT_USER,
    EMPTY_MESSAGE,
    GENERAL_ID,
    GUILD_ID,
    INVALID_FORM_BODY,
    INVALID_RECIPIENTS,
    NON_TEXT_CHANNEL,
    UNKNOWN_CHANNEL,
    UNKNOWN_INTERACTION,
    UNKNOWN_MESSAGE,
    UNKNOWN_WEBHOOK,
    ApiError,
    Json,
    make_user,
)
from tests.fakes.discord_rest import (
    API_PREFIX,
    ApiRequest,
    Failure,
    Interaction,
    InteractionResponse,
    RestMixin,
    SentMessage,
)
from tests.fakes.loopback import LoopbackServer

__all__ = [
    "ALREADY_ACKNOWLEDGED",
    "API_PREFIX",
    "APPLICATION_ID",
    "BOT_USER",
    "DEFAULT_TOKEN",
    "DEFAULT_USER",
    "EMPTY_MESSAGE",
    "GENERAL_ID",
    "GUILD_ID",
    "INTENT_DIRECT_MESSAGES",
    "INTENT_GUILDS",
    "INTENT_GUILD_MESSAGES",
    "INTENT_MESSAGE_CONTENT",
    "INVALID_FORM_BODY",
    "INVALID_RECIPIENTS",
    "NON_TEXT_CHANNEL",
    "UNKNOWN_CHANNEL",
    "UNKNOWN_INTERACTION",
    "UNKNOWN_MESSAGE",
    "UNKNOWN_WEBHOOK",
    "ApiError",
    "ApiRequest",
    "FakeDiscord",
    "InteractionResponse",
    "Json",
    "SentMessage",
    "make_user",
]


class FakeDiscord(GatewayMixin, RestMixin):
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
        self.deleted: list[tuple[str, str]] = []  # (channel id, message id) the bot deleted
        self.typing: list[str] = []
        self.commands: list[Json] = []
        self.guild_commands: dict[str, list[Json]] = {}
        self.responses: list[InteractionResponse] = []
        self.requests: list[ApiRequest] = []
        self.interactions: dict[str, Interaction] = {}
        self.identifies = 0
        self.resumes = 0
        self.heartbeats = 0
        self.refused = 0
        self.ready_count = 0
        self.resumed_count = 0
        self.commands_version = 0
        # machinery
        self._failures = []
        self._nonces: dict[tuple[str, str], Json] = {}
        # Whether the bot's owner switched on the privileged Message Content intent.
        self.message_content_enabled = True
        self.member_requests = 0
        self._session = None
        self._connections = set()
        self._deaf_conn = None
        self._changed = asyncio.Event()
        self._positions = itertools.count(1)
        routes = [*self._rest_routes(), WebSocketRoute("/gateway", self._gateway)]
        self._server = LoopbackServer(Starlette(routes=routes))

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
        await self._close_connections()
        await self._server.stop()

    # -- recorded state -----------------------------------------------------------------

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

    def delete_message(self, channel_id: str, message_id: str) -> None:
        """Someone (a moderator, the person) deletes a message: MESSAGE_DELETE."""
        message = self._find_message(channel_id, message_id)
        if message is None:
            raise KeyError(f"no message {message_id} in channel {channel_id}")
        self._remove(message)
        self._notify()

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
        return self.dispatch_interaction(self._interaction_payload(2, data, channel, user, dm))

    def click(self, message_id: str, label: str, *, user: Json = DEFAULT_USER) -> Json:
        """Dispatch the INTERACTION_CREATE (MESSAGE_COMPONENT) of ``user`` clicking the
        button labelled ``label`` under the bot's message ``message_id``; returns it."""
        message = next(
            (m for ms in self.messages.values() for m in ms if m["id"] == message_id), None
        )
        if message is None:
            raise LookupError(f"no message {message_id}")
        buttons = [b for row in message.get("components", []) for b in row["components"]]
        button = next((b for b in buttons if b.get("label") == label), None)
        if button is None:
            raise LookupError(f"no button {label!r} under message {message_id}")
        self.users.setdefault(user["id"], user)
        channel = self.channels[message["channel_id"]]
        data: Json = {"custom_id": button["custom_id"], "component_type": button["type"]}
        payload = self._interaction_payload(3, data, channel, user, channel["type"] == p.DM)
        payload["message"] = copy.deepcopy(message)
        return self.dispatch_interaction(payload)

    def dispatch_interaction(self, payload: Json) -> Json:
        """Dispatch INTERACTION_CREATE ``payload`` (again, to model a redelivery)."""
        if payload["id"] not in self.interactions:
            self.interactions[payload["id"]] = Interaction(payload, time.monotonic())
        self._dispatch("INTERACTION_CREATE", payload)
        return payload

    def _interaction_payload(
        self, kind: int, data: Json, channel: Json, user: Json, dm: bool
    ) -> Json:
        payload: Json = {
            "id": p.new_snowflake(),
            "application_id": APPLICATION_ID,
            "type": kind,
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

    # -- faults (REST; the gateway's are GatewayMixin's) ---------------------------------

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
            Failure(
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
