"""Discord adapter on discord.py 2: DMs, guild channels, threads and slash commands.

- **Connecting.** ``api_base`` and ``gateway_url`` point discord.py at Discord or at a
  proxy: both are class attributes of the library (``discord.http.Route.BASE``,
  ``DiscordWebSocket.DEFAULT_GATEWAY``), so one process talks to one Discord. The
  token is checked at start (a rejected token stops start-up); an unreachable Discord
  is retried in the background. discord.py reconnects and RESUMEs by itself. If the
  privileged Message Content intent is not enabled for the bot, it connects without
  it: mentions and DMs still carry their text.
- **Ingest.** Each message is committed to the inbox, unique on its message id,
  before it is processed (``adapters.discord_messages`` decides what is for the
  agent). Attachments are downloaded first, up to a size cap.
- **Nothing lost.** After every READY or RESUMED, the history of recently active
  chats, allowed channels and (when no channel is allowed by name) guild channels
  with newer messages is read from the newest message seen (at most
  ``catch_up_max_age`` back); the inbox drops what was already taken.
- **Health.** A watchdog reconnects a socket whose heartbeats go unacknowledged or
  that delivers no event for ``watchdog_silence_seconds`` while in a guild; ``healthy``
  (``/readyz``) is False until READY or RESUMED.
- **Replies** are sent by ``adapters.discord_send``; typing is shown while turns run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import discord
import yarl
from discord import app_commands
from discord.gateway import DiscordWebSocket

from adapters.discord_catchup import CatchUp, Scope
from adapters.discord_commands import SlashCommands
from adapters.discord_messages import Access, Ignored, Incoming, Place, Refused, decide
from adapters.discord_send import Interactions, ReplySender
from core.errors import ConfigError
from core.inbox import Inbox
from core.messages import Attachment, InboundMessage, OutboundMessage
from core.store.records import InboxItem
from core.tasks import TaskSet

log = logging.getLogger(__name__)

TYPING_EVERY_SECONDS = 8.0  # Discord shows typing for 10 s
# After the last GUILD_CREATE, how long discord.py waits for more before on_ready
# (its default, 2 s, is meant for member chunking, which this adapter does not use).
GUILD_READY_SECONDS = 0.5
REFUSAL = (
    "Sorry, I can only talk with people this bot's owner has allowed. "
    "Ask them to add you (discord.allowed_users)."
)
REFUSE_AGAIN_AFTER_SECONDS = 3600.0
MAX_REMEMBERED_REFUSALS = 10_000


@dataclass(frozen=True, slots=True)
class DiscordOptions:
    """The adapter's settings, mapped from ``discord:`` in the gateway config."""

    token: str = field(repr=False)
    api_base: str = "https://discord.com/api/v10"
    gateway_url: str = "wss://gateway.discord.gg/"
    message_content: bool = True
    require_mention: bool = True
    access: Access = Access()
    allow_bots: bool = False
    catch_up_max_age: float = 3600.0
    max_file_bytes: int = 20_000_000
    watchdog_silence_seconds: float = 1800.0
    slash_commands: bool = True
    cache_dir: Path = Path(".")


def intents(message_content: bool) -> discord.Intents:
    """Guilds, guild and DM messages, and (privileged) message content."""
    chosen = discord.Intents.none()
    chosen.guilds = True
    chosen.guild_messages = True
    chosen.dm_messages = True
    chosen.message_content = message_content
    return chosen


class DiscordAdapter:
    """See the module docstring."""

    name = "discord"
    push = True

    def __init__(self, options: DiscordOptions, *, now: Callable[[], float] = time.time) -> None:
        self.options = options
        self._now = now
        self._inbox: Inbox | None = None
        self._tasks = TaskSet("discord")
        self._interactions = Interactions()
        self._commands = SlashCommands(self._interactions, self._submit_command)
        self._message_content = options.message_content
        self._client, self._tree = self._new_client()
        self._replies = ReplySender(lambda: self._client, self._interactions)
        roles = bool(options.access.roles) and not options.access.everyone
        scope = Scope(options.catch_up_max_age, options.access.channels, roles)
        self._catch_up = CatchUp(lambda: self._client, self._ingest_message, scope, now=now)
        self._refused_at: dict[str, float] = {}
        self._typing: dict[str, set[asyncio.Future[Any]]] = {}
        self._last_event = time.monotonic()
        self._connection: asyncio.Future[None] | None = None
        self._healing = False
        self.healthy = False

    # lifecycle
    def _new_client(self) -> tuple[discord.Client, app_commands.CommandTree[discord.Client]]:
        client = discord.Client(
            intents=intents(self._message_content), guild_ready_timeout=GUILD_READY_SECONDS
        )
        tree: app_commands.CommandTree[discord.Client] = app_commands.CommandTree(client)
        for handler in (
            self.on_ready,
            self.on_resumed,
            self.on_disconnect,
            self.on_message,
            self.on_socket_event_type,
        ):
            client.event(handler)
        if self.options.slash_commands and self._inbox is not None:
            self._commands.install(tree, self._inbox.command_menu())
        return client, tree

    async def start(self, inbox: Inbox) -> None:
        """Log in, then connect in the background. A token Discord rejects stops
        start-up; an unreachable Discord is retried without holding the gateway up."""
        self._inbox = inbox
        discord.http.Route.BASE = self.options.api_base.rstrip("/")
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self.options.gateway_url)
        if self.options.slash_commands:
            self._commands.install(self._tree, inbox.command_menu())
        logged_in = True
        try:
            await self._client.login(self.options.token)
        except discord.LoginFailure as exc:
            await self._client.close()
            raise ConfigError("discord.bot_token", "Discord rejected the token") from exc
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            log.warning("discord: cannot reach Discord (%s); retrying in the background", exc)
            logged_in = False
        self._tasks.spawn(self._run(logged_in), name="connect")
        self._tasks.spawn(self._watchdog(), name="watchdog")

    async def _run(self, logged_in: bool) -> None:
        """Keep a client connected: discord.py reconnects and resumes by itself; this
        loop starts a fresh client when one gave up, or was found deaf."""
        pause = 1.0
        while True:
            try:
                if not logged_in:
                    await self._client.login(self.options.token)
                self._connection = asyncio.ensure_future(self._client.connect(reconnect=True))
                await self._connection
            except discord.LoginFailure:
                log.error("discord: the bot token was rejected; the adapter stays off")  # noqa: TRY400
                return
            except discord.PrivilegedIntentsRequired:
                log.warning(
                    "discord: the Message Content intent is not enabled for this bot in the "
                    "developer portal; connecting without it (only mentions and DMs carry text)"
                )
                self._message_content = False
            except asyncio.CancelledError:
                if not self._healing:
                    raise  # stop()
                pause = 1.0
            except Exception as exc:  # any failure: log it, wait, start afresh
                log.warning("discord: connection lost (%s); reconnecting in %.0f s", exc, pause)
                self.healthy = False
                await asyncio.sleep(pause)
                pause = min(pause * 2, 60.0)
            await self._replace_client()
            logged_in = False

    async def _replace_client(self) -> None:
        self.healthy = False
        _cancel_ready_wait()
        with contextlib.suppress(Exception):
            await self._client.close()
        self._client, self._tree = self._new_client()
        self._healing = False
        self._last_event = time.monotonic()

    async def stop(self) -> None:
        self.healthy = False
        # Our tasks first: a connection cancelled mid-read closes quietly, where one
        # closed under discord.py would dispatch events to a client already gone.
        await self._tasks.close()
        _cancel_ready_wait()
        await self._client.close()

    # gateway events
    async def on_ready(self) -> None:
        user = self._client.user
        log.info("discord: connected as %s in %d guilds", user, len(self._client.guilds))
        self._connected()
        if self.options.slash_commands:
            self._tasks.spawn(self._commands.sync(self._tree), name="sync-commands")

    async def on_resumed(self) -> None:
        log.info("discord: session resumed")
        self._connected()

    def _connected(self) -> None:
        self._last_event = time.monotonic()
        self.healthy = True
        if self.options.catch_up_max_age > 0 and self._inbox is not None:
            self._tasks.spawn(self._catch_up.run(self._inbox), name="catch-up")

    async def on_disconnect(self) -> None:
        self.healthy = False

    async def on_socket_event_type(self, event_type: str) -> None:
        self._last_event = time.monotonic()

    async def on_message(self, message: discord.Message) -> None:
        try:
            await self._ingest_message(message, live=True)
        except Exception:
            # Not stored: the catch-up after the next reconnect reads it from history.
            log.exception("discord: message %s not stored", message.id)

    # ingest
    async def _ingest_message(self, message: discord.Message, *, live: bool) -> None:
        assert self._inbox is not None
        user = self._client.user
        if user is None:
            return
        o = self.options
        decision = decide(
            message, user.id, o.access, require_mention=o.require_mention, allow_bots=o.allow_bots
        )
        if isinstance(decision, Ignored):
            log.debug("discord: message %s ignored: %s", message.id, decision.reason)
        elif isinstance(decision, Refused):
            if live:
                await self._refuse(decision)
        else:
            await self._accept(decision)

    async def _refuse(self, refused: Refused) -> None:
        now = self._now()
        last = self._refused_at.get(refused.user_id)
        if last is not None and now - last < REFUSE_AGAIN_AFTER_SECONDS:
            return
        if len(self._refused_at) >= MAX_REMEMBERED_REFUSALS:
            self._refused_at.clear()  # strangers must not grow memory forever
        self._refused_at[refused.user_id] = now
        channel = self._client.get_partial_messageable(int(refused.place.reply_channel))
        try:
            await channel.send(REFUSAL)
        except discord.HTTPException as exc:
            log.warning("discord: refusal not sent: %s", exc)

    async def _accept(self, incoming: Incoming) -> None:
        assert self._inbox is not None
        attachments, notes = await self._download(incoming.attachments)
        text = "\n".join(p for p in (incoming.text, *notes) if p)
        msg = dataclasses.replace(
            self._inbound(
                incoming.place, incoming.user_id, incoming.user_name, text, str(incoming.message.id)
            ),
            reply_to=incoming.reply_to,
            attachments=tuple(attachments),
        )
        accepted = await self._inbox.accept(msg)
        if accepted.created:
            self._show_typing(accepted.item, incoming.place.reply_channel)

    def _inbound(
        self, place: Place, user_id: str, user_name: str, text: str, message_id: str
    ) -> InboundMessage:
        return InboundMessage(
            platform=self.name,
            chat_id=place.chat_id,
            user_id=user_id,
            text=text or "(sent a file)",
            platform_message_id=message_id,
            dedup_key=message_id,
            received_at=self._now(),
            thread_id=place.thread_id,
            user_name=user_name,
            is_group=place.is_group,
        )

    async def _submit_command(
        self, interaction: discord.Interaction, place: Place, text: str
    ) -> bool:
        """Store a slash command for the core; False when its user is not allowed."""
        assert self._inbox is not None
        user = interaction.user
        if not self.options.access.allows(user, place.channel_ids):
            return False
        msg = self._inbound(place, str(user.id), user.display_name, text, str(interaction.id))
        await self._inbox.accept(msg)
        return True

    async def _download(
        self, files: list[discord.Attachment]
    ) -> tuple[list[Attachment], list[str]]:
        attachments: list[Attachment] = []
        notes: list[str] = []
        folder = self.options.cache_dir / "discord"
        for file in files:
            if file.size > self.options.max_file_bytes:
                notes.append(f"[{file.filename} was not read: larger than the file size limit]")
                continue
            path = folder / _safe_name(f"{file.id}-{file.filename}")
            try:
                data = await file.read()
                await asyncio.to_thread(_write_file, path, data)
            except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
                log.warning("discord: could not download %s: %s", file.filename, exc)
                notes.append(f"[{file.filename} could not be downloaded]")
                continue
            mime = file.content_type or "application/octet-stream"
            attachments.append(Attachment(str(path), mime, file.filename, len(data)))
            notes.append(f"[attached {file.filename} ({mime}, {len(data):,} bytes): {path}]")
        return attachments, notes

    # typing
    def _show_typing(self, item: InboxItem, channel_id: str) -> None:
        """Show "typing…" until ``item``'s turn is done: one loop per channel."""
        assert self._inbox is not None
        turn = asyncio.ensure_future(asyncio.shield(self._inbox.replies(item)))
        waiting = self._typing.setdefault(channel_id, set())
        waiting.add(turn)
        if len(waiting) == 1:
            self._tasks.spawn(self._typing_loop(channel_id), name=f"typing:{channel_id}")

    async def _typing_loop(self, channel_id: str) -> None:
        channel = self._client.get_partial_messageable(int(channel_id))
        try:
            while True:
                waiting = {t for t in self._typing.get(channel_id, set()) if not t.done()}
                if not waiting:
                    self._typing.pop(channel_id, None)  # no await since the check
                    return
                self._typing[channel_id] = waiting
                with contextlib.suppress(discord.HTTPException, aiohttp.ClientError, OSError):
                    await channel.typing()  # a courtesy: never a reason to fail
                await asyncio.wait(waiting, timeout=TYPING_EVERY_SECONDS)
        finally:
            for turn in self._typing.pop(channel_id, set()):
                turn.cancel()

    # health
    async def _watchdog(self) -> None:
        silence = self.options.watchdog_silence_seconds
        every = min(30.0, silence / 4) if silence > 0 else 30.0
        while True:
            await asyncio.sleep(every)  # a periodic check, not a wait for an event
            reason = self._deaf_reason(silence)
            if reason is not None:
                await self._heal(reason)

    def _deaf_reason(self, silence: float) -> str | None:
        client = self._client
        ws = client.ws
        if ws is None or not self.healthy or client.is_closed():
            return None
        beat = getattr(ws, "_keep_alive", None)  # discord.py keeps ack times only here
        if beat is not None and beat.interval:
            unacked = time.perf_counter() - beat._last_ack
            if unacked > 2 * beat.interval + 5:
                return f"no heartbeat acknowledged for {unacked:.0f} s"
        quiet = time.monotonic() - self._last_event
        if silence > 0 and client.guilds and quiet > silence:
            return f"no event for {quiet:.0f} s"
        return None

    async def _heal(self, reason: str) -> None:
        """Start a fresh session: resuming a deaf one keeps discord.py's stale view of
        the channels, while a new READY brings every channel's newest message id."""
        log.warning("discord: connection looks deaf (%s); reconnecting", reason)
        self.healthy = False
        if self._connection is not None and not self._connection.done():
            self._healing = True
            self._connection.cancel()  # _run starts a new client

    # replies
    async def send(self, msg: OutboundMessage) -> str | None:
        """Send a reply as one or more messages; raise ``DeliveryError`` to retry later."""
        return await self._replies.send(msg)


def _cancel_ready_wait() -> None:
    """Cancel discord.py's wait for guilds before on_ready: it outlives ``close()`` and
    would dispatch ``on_ready`` to a closed client (a stop right after connecting)."""
    for task in asyncio.all_tasks():
        coro = task.get_coro()
        if getattr(coro, "__qualname__", "").endswith("ConnectionState._delay_ready"):
            task.cancel()


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)[:200]
