"""Discord adapter on discord.py 2: DMs, guild channels, threads and slash commands.

- **Connecting.** ``api_base`` and ``gateway_url`` point discord.py at Discord or at a proxy: both
  are class attributes of the library (``discord.http.Route.BASE``,
  ``DiscordWebSocket.DEFAULT_GATEWAY``), so one process talks to one Discord. The token is checked
  at start (a rejected token stops start-up); an unreachable Discord is retried in the background.
  discord.py reconnects and RESUMEs by itself; when a client gives up, or looks deaf, a fresh one
  takes its place. If the privileged Message Content intent is not enabled for the bot, it connects
  without it: mentions and DMs still carry their text.
- **Ingest** (``.ingest``): each message is stored, unique on its id, before it is processed.
- **Nothing lost** (``.catchup``): after every new session (READY), history is read from the
  newest message stored before the connection was lost; one not stored is read again soon.
- **Health** (``.watchdog``): not ``healthy`` from a disconnect until READY or RESUMED.
- **Replies** and files (``.send``, ``.files``), **slash commands**, **buttons** (``.buttons``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import field
from pathlib import Path

import aiohttp
import discord
import yarl
from discord import app_commands
from discord.gateway import DiscordWebSocket
from fastapi import FastAPI

from adapters.discord.buttons import Buttons, Clicks
from adapters.discord.catchup import CatchUp, Scope
from adapters.discord.client import RetiringClient, intents
from adapters.discord.commands import SlashCommands
from adapters.discord.ingest import Ingester, IngestRules
from adapters.discord.messages import Access
from adapters.discord.preview import DiscordPreviews
from adapters.discord.send import Interactions, ReplySender
from adapters.discord.watchdog import Watchdog
from core.errors import ConfigError
from core.inbox import Inbox
from core.ledger import DeliveryLedger
from core.media.store import MediaStore
from core.messages import OutboundMessage
from core.record import record
from core.retry import Backoff
from core.tasks import LIBRARY_STOP_GRACE_SECONDS, TaskSet

log = logging.getLogger(__name__)

DEFAULT_GATEWAY_URL = "wss://gateway.discord.gg/"
# After the last GUILD_CREATE, how long discord.py waits for more before on_ready
# (its default, 2 s, is meant for member chunking, which this adapter does not use).
GUILD_READY_SECONDS = 0.5
CATCH_UP_RETRY_SECONDS = 5.0
CATCH_UP_MAX_SECONDS = 300.0
# Pauses between fresh clients while Discord cannot be reached.
RECONNECT_FIRST_SECONDS = 1.0
RECONNECT_MAX_SECONDS = 60.0
LIVE_HOLD_SECONDS = 10.0  # the longest a live message waits for the catch-up


@record
class DiscordOptions:
    """The adapter's settings, mapped from ``discord:`` in the gateway config."""

    token: str = field(repr=False)
    api_base: str = "https://discord.com/api/v10"
    gateway_url: str = DEFAULT_GATEWAY_URL
    message_content: bool = True
    require_mention: bool = True
    access: Access = Access()
    allow_bots: bool = False
    catch_up_max_age: float = 3600.0
    max_file_bytes: int = 20_000_000
    watchdog_silence_seconds: float = 300.0
    slash_commands: bool = True
    cache_dir: Path = Path(".")
    media: MediaStore | None = None  # where the files replies carry are stored
    # Replies shown while generated (``adapters.discord.preview``); None: off.
    stream_updates_per_second: float | None = 10.0


Tree = app_commands.CommandTree[discord.Client]


class DiscordAdapter:
    """See the module docstring."""

    name = "discord"
    push = True

    def __init__(self, options: DiscordOptions, *, now: Callable[[], float] = time.time) -> None:
        self.options = options
        self._now = now
        self._tasks = TaskSet("discord")
        self._interactions = Interactions()
        self._message_content = options.message_content
        self._client, self._tree = self._new_client()
        self._replies = ReplySender(
            lambda: self._client, self._interactions, Buttons(), options.media
        )
        self.previews = self._previews(options.stream_updates_per_second)
        self._watchdog = Watchdog(
            lambda: self._client, self._heal, silence=options.watchdog_silence_seconds
        )
        self._inbox: Inbox | None = None
        self._ingester: Ingester | None = None
        self._catch_up: CatchUp | None = None
        self._commands: SlashCommands | None = None
        self._clicks: Clicks | None = None
        self._connection: asyncio.Future[None] | None = None
        self._healing = False
        self._closed = False
        # When live events stopped (start-up, a disconnect): catch-up reads from there.
        self._lost_at: float | None = None
        self._catching_up = False
        self._caught_up = asyncio.Event()
        self._caught_up.set()
        self._catch_up_wanted: float | None = None
        self._catch_up_channels: set[int] = set()
        self._backoff = Backoff(RECONNECT_FIRST_SECONDS, RECONNECT_MAX_SECONDS)
        self.healthy = False

    # lifecycle
    def _new_client(self) -> tuple[RetiringClient, Tree]:
        client = RetiringClient(
            intents=intents(self._message_content), guild_ready_timeout=GUILD_READY_SECONDS
        )
        tree: Tree = app_commands.CommandTree(client)
        for handler in (
            self.on_ready,
            self.on_resumed,
            self.on_disconnect,
            self.on_message,
            self.on_interaction,
            self.on_socket_event_type,
        ):
            client.event(handler)
        return client, tree

    async def start(self, inbox: Inbox, ledger: DeliveryLedger) -> None:
        """Log in, then connect in the background. A token Discord rejects stops
        start-up; an unreachable Discord is retried without holding the gateway up."""
        o = self.options
        self._inbox = inbox
        self._replies.progress.record = ledger.parts_sent
        if self.previews is not None:
            self.previews.start(ledger)
        self._lost()  # nothing was received before now: the first READY catches up
        self._ingester = Ingester(
            lambda: self._client,
            inbox,
            IngestRules(o.access, o.require_mention, o.allow_bots, o.max_file_bytes, o.cache_dir),
            self._tasks,
            now=self._now,
        )
        scope = Scope(o.catch_up_max_age, o.access)
        self._catch_up = CatchUp(lambda: self._client, self._ingester.message, scope, now=self._now)
        self._commands = SlashCommands(self._interactions, self._ingester.command)
        self._clicks = Clicks(self._replies.buttons, self._ingester.click)
        self._install_commands()
        discord.http.Route.BASE = o.api_base.rstrip("/")
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(o.gateway_url)
        logged_in = True
        try:
            await self._client.login(o.token)
        except discord.LoginFailure as exc:
            await self._client.close()
            raise ConfigError("discord.bot_token", "Discord rejected the token") from exc
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            log.warning("discord: cannot reach Discord (%s); retrying in the background", exc)
            await self._replace_client()  # a failed login leaves a session open
            logged_in = False
        self._tasks.spawn(self._run(logged_in), name="connect")
        self._tasks.spawn(self._watchdog.run(lambda: self.healthy), name="watchdog")

    def _previews(self, per_second: float | None) -> DiscordPreviews | None:
        if per_second is None:
            return None  # discord.streaming: off: replies arrive whole
        return DiscordPreviews(
            lambda: self._client, self._interactions, self._tasks, updates_per_second=per_second
        )

    def install(self, app: FastAPI) -> None:
        return None  # Discord is reached by connecting out: no HTTP routes

    def _install_commands(self) -> None:
        if self.options.slash_commands and self._commands and self._inbox:
            self._commands.install(self._tree, self._inbox.command_menu())

    async def _run(self, logged_in: bool) -> None:
        """Keep a client connected: discord.py reconnects and resumes by itself; this
        loop starts a fresh client when one gave up, or was found deaf."""
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
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # stop()
                if not self._healing:
                    log.warning("discord: the connection was cancelled; reconnecting")
            except Exception as exc:  # any failure: log it, wait, start afresh
                self._lost()
                pause = self._backoff.next()
                log.warning("discord: connection lost (%s); reconnecting in %.0f s", exc, pause)
                await asyncio.sleep(pause)
            await self._replace_client()
            logged_in = False

    async def _replace_client(self) -> None:
        self._lost()
        self._client.retire()
        with contextlib.suppress(Exception):
            # Shielded: a stop() meanwhile must not leave this client half closed.
            await asyncio.shield(self._client.close())
        await self._client.settled()
        self._client, self._tree = self._new_client()
        self._install_commands()
        self._healing = False

    async def _heal(self, reason: str) -> None:
        """Start a fresh session: resuming a deaf one keeps discord.py's stale view of
        the channels, while a new READY brings every channel's newest message id."""
        log.warning("discord: connection looks deaf (%s); reconnecting", reason)
        self._lost()
        if self._connection is not None and not self._connection.done():
            self._healing = True
            self._connection.cancel()  # _run starts a new client

    async def stop(self) -> None:
        self._closed = True
        self.healthy = False
        # Our tasks first: a connection cancelled mid-read closes quietly, where one
        # closed under discord.py would dispatch events to a client already gone.
        await self._tasks.close(grace=LIBRARY_STOP_GRACE_SECONDS)  # bounded: see core.tasks
        self._client.retire()
        with contextlib.suppress(asyncio.CancelledError):  # a close already under way
            await self._client.close()
        await self._client.settled()  # no discord.py task outlives the client

    # gateway events
    async def on_ready(self) -> None:
        if self._closed:
            return
        client = self._client
        log.info("discord: connected as %s in %d guilds", client.user, len(client.guilds))
        self._connected()
        if self._commands is not None and self.options.slash_commands:
            self._tasks.spawn(self._commands.sync(self._tree), name="sync-commands")
        lost_at, self._lost_at = self._lost_at, None
        if lost_at is not None:
            self._schedule_catch_up(lost_at, delay=0.0)

    async def on_resumed(self) -> None:
        if self._closed:
            return
        log.info("discord: session resumed")
        self._connected()
        self._lost_at = None  # Discord replayed what happened meanwhile
        if not self._catching_up:
            self._caught_up.set()

    def _connected(self) -> None:
        self._watchdog.heard()
        self._backoff.reset()
        self.healthy = True
        if self.options.gateway_url != DEFAULT_GATEWAY_URL and self._client.ws is not None:
            # Resume through the configured proxy too, not the URL READY names.
            self._client.ws.gateway = yarl.URL(self.options.gateway_url)

    async def on_disconnect(self) -> None:
        self._lost()

    def _lost(self) -> None:
        self.healthy = False
        if self._lost_at is None:
            self._lost_at = self._now()
        if self.options.catch_up_max_age > 0:
            self._caught_up.clear()  # live messages wait for what was missed first

    async def on_socket_event_type(self, event_type: str) -> None:
        self._watchdog.heard()

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        if not self._closed and self._clicks is not None:
            await self._clicks.handle(interaction)  # a button under a reply, if one

    async def on_message(self, message: discord.Message) -> None:
        if self._closed or self._ingester is None:
            return
        if not self._caught_up.is_set():
            # After a new session, messages missed meanwhile go first (a photo sent while
            # the bot was away, then the question about it): wait for the catch-up, but
            # not forever. Waiters wake in arrival order, so live order is kept.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._caught_up.wait(), LIVE_HOLD_SECONDS)
        try:
            await self._ingester.message(message, live=True)
        except Exception:
            log.exception("discord: message %s not stored; reading it again soon", message.id)
            self._schedule_catch_up(
                self._now(), delay=CATCH_UP_RETRY_SECONDS, channel=message.channel.id
            )

    # catch-up
    def _schedule_catch_up(
        self, lost_at: float, *, delay: float, channel: int | None = None
    ) -> None:
        """Read history after the newest message stored before ``lost_at`` (and in
        ``channel`` too): one pass at a time, a request during a pass runs after it."""
        if self.options.catch_up_max_age <= 0 or self._closed:
            return
        earliest = self._catch_up_wanted
        self._catch_up_wanted = lost_at if earliest is None else min(earliest, lost_at)
        if channel is not None:
            self._catch_up_channels.add(channel)
        if not self._catching_up:
            self._catching_up = True
            self._tasks.spawn(self._catch_up_loop(delay), name="catch-up")

    async def _catch_up_loop(self, delay: float) -> None:
        assert self._catch_up is not None
        assert self._inbox is not None
        backoff = Backoff(CATCH_UP_RETRY_SECONDS, CATCH_UP_MAX_SECONDS)
        try:
            if delay:
                await asyncio.sleep(delay)  # let whatever failed (the database?) recover
            while self._catch_up_wanted is not None:
                lost_at, self._catch_up_wanted = self._catch_up_wanted, None
                channels, self._catch_up_channels = self._catch_up_channels, set()
                try:
                    await self._catch_up.run(self._inbox, lost_at, channels)
                    backoff.reset()
                except Exception as exc:
                    self._caught_up.set()  # do not hold live messages through retries
                    pause = backoff.next()
                    log.warning("discord: catch-up incomplete (%s); again in %.0f s", exc, pause)
                    self._schedule_catch_up(lost_at, delay=0.0)
                    self._catch_up_channels |= channels
                    await asyncio.sleep(pause)
                self._caught_up.set()
        finally:
            self._catching_up = False
            self._caught_up.set()

    # replies
    async def send(self, msg: OutboundMessage) -> str | None:
        """Send a reply as one or more messages; raise ``DeliveryError`` to retry later."""
        return await self._replies.send(msg)
