"""Reading what was missed from Discord's history after a reconnect or a restart.

Discord does not queue messages for a bot that is away: a RESUME replays only a
short buffer, a new session nothing. So after every READY or RESUMED the adapter
reads, oldest first, each candidate channel's messages after the newest one it
took there (never more than ``catch_up_max_age`` back):

- chats (DMs, channels, threads) with a message in the inbox that recently;
- the allowed channels, and threads under them;
- with no allowed channel configured, every guild channel and thread whose last
  message is newer than that.

Each message goes through the same decision and inbox as a live one, so what was
already taken is dropped by the inbox's unique key and nothing is answered twice.
Authors in guild history come without their roles; when roles can admit someone,
their member record is fetched.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import aiohttp
import discord

from core.inbox import Inbox

log = logging.getLogger(__name__)

MAX_PER_CHANNEL = 500
PLATFORM = "discord"


@dataclass(frozen=True, slots=True)
class Scope:
    """How far back to read, the allowed channels, and whether roles admit anyone."""

    max_age: float
    channels: frozenset[str]
    roles: bool


class Ingest(Protocol):
    def __call__(self, message: discord.Message, *, live: bool) -> Awaitable[None]: ...


class CatchUp:
    """See the module docstring."""

    def __init__(
        self,
        client: Callable[[], discord.Client],
        ingest: Ingest,
        scope: Scope,
        *,
        now: Callable[[], float],
    ) -> None:
        self._client = client
        self._ingest = ingest
        self._scope = scope
        self._now = now
        self._lock = asyncio.Lock()

    async def run(self, inbox: Inbox) -> int:
        """Read missed messages; return how many history messages were looked at."""
        scope = self._scope
        async with self._lock:  # one pass at a time; a later one starts where it ended
            since = self._now() - scope.max_age
            cutoff = discord.utils.time_snowflake(datetime.fromtimestamp(since, UTC))
            starts = await self._starts(inbox, since, cutoff, scope.channels, not scope.channels)
            seen = 0
            members: dict[int, discord.Member | None] = {}
            for channel_id, after in starts.items():
                try:
                    seen += await self._read(channel_id, after, members if scope.roles else None)
                except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
                    log.warning("discord: catch-up in channel %s failed: %s", channel_id, exc)
                except Exception:
                    # Not stored (the database?): the next reconnect reads it again.
                    log.exception("discord: catch-up stopped")
                    break
            if seen:
                log.info("discord: caught up on %d messages in %d channels", seen, len(starts))
            return seen

    async def _starts(
        self,
        inbox: Inbox,
        since: float,
        cutoff: int,
        channels: frozenset[str],
        scan_guilds: bool,
    ) -> dict[int, int]:
        """Channel id -> the message id to read after."""
        starts: dict[int, int] = {}
        for last in await inbox.last_seen(PLATFORM, since):
            channel = last.thread_id or last.chat_id
            if channel.isdigit():
                mid = int(last.platform_message_id) if last.platform_message_id.isdigit() else 0
                starts[int(channel)] = max(cutoff, mid)
        for cid in channels:
            if cid.isdigit():
                starts.setdefault(int(cid), cutoff)
        for channel_obj in self._guild_channels(channels, scan_guilds):
            last_id = channel_obj.last_message_id
            if last_id is not None and last_id > starts.get(channel_obj.id, cutoff):
                starts.setdefault(channel_obj.id, cutoff)
        return starts

    def _guild_channels(
        self, allowed: frozenset[str], scan_guilds: bool
    ) -> Iterable[discord.TextChannel | discord.Thread]:
        for guild in self._client().guilds:
            me = guild.me
            found: list[discord.TextChannel | discord.Thread] = [
                *guild.text_channels,
                *guild.threads,
            ]
            for channel in found:
                parent = str(getattr(channel, "parent_id", "") or "")
                if not scan_guilds and parent not in allowed:
                    continue
                if me is None or channel.permissions_for(me).read_message_history:
                    yield channel

    async def _read(
        self, channel_id: int, after: int, members: dict[int, discord.Member | None] | None
    ) -> int:
        channel = self._client().get_channel(channel_id)
        if channel is None:
            channel = await self._client().fetch_channel(channel_id)
        if not isinstance(channel, discord.abc.Messageable):
            return 0
        count = 0
        history = channel.history(
            after=discord.Object(after), limit=MAX_PER_CHANNEL, oldest_first=True
        )
        async for message in history:
            count += 1
            if members is not None:
                await self._with_member(message, members)
            await self._ingest(message, live=False)
        if count >= MAX_PER_CHANNEL:
            log.warning(
                "discord: channel %s had more than %d missed messages; later ones were not read",
                channel_id,
                MAX_PER_CHANNEL,
            )
        return count

    async def _with_member(
        self, message: discord.Message, members: dict[int, discord.Member | None]
    ) -> None:
        """Put the author's roles on a guild history message (history omits them)."""
        guild = message.guild
        author = message.author
        if guild is None or isinstance(author, discord.Member) or author.bot:
            return
        if author.id not in members:
            try:
                members[author.id] = await guild.fetch_member(author.id)
            except discord.HTTPException:
                members[author.id] = None  # left the guild: a User, without roles
        member = members[author.id]
        if member is not None:
            message.author = member
