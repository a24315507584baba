"""Reading what was missed from Discord's history after a restart or a new session.

Discord does not queue messages for a bot that is away: a RESUME replays a short
buffer (so nothing is read then), a new session (READY) nothing. So after every
READY the adapter reads the messages each candidate channel received after the
newest one it took there before the connection was lost, never more than
``catch_up_max_age`` back:

- chats (DMs, channels, threads) with a message in the inbox in the week before, the
  500 most recently active;
- the allowed channels, and channels and threads under them;
- unless only channels admit anyone, every guild channel and thread whose last
  message (as the new session's READY reports it) is newer than that.

Start points come only from messages stored before the connection was lost: a live
message that arrives while the catch-up is starting must not hide older ones.
History is read newest first down to the start point (at most ``MAX_PER_CHANNEL``
messages, the most recent), then handed over oldest first through the same
decision and inbox as live messages, so what was already taken is dropped by the
inbox's unique key and nothing is answered twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Protocol

import aiohttp
import discord

from adapters.discord.messages import Access
from core.errors import CatchUpIncomplete
from core.inbox import Inbox
from core.record import record

log = logging.getLogger(__name__)

MAX_PER_CHANNEL = 500
# Chats active this long before the connection was lost are looked at (at most
# MAX_CHATS of them, the most recently active): one history request each.
CANDIDATE_DAYS = 7
MAX_CHATS = 500
MAX_TRIES = 3  # a message that cannot be stored this often is skipped (and logged)
PLATFORM = "discord"


class Ingest(Protocol):
    def __call__(self, message: discord.Message, *, live: bool) -> Awaitable[None]: ...


@record
class Scope:
    """How far back to read, and who may talk (which says where to look)."""

    max_age: float
    access: Access


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
        self._failures: dict[int, int] = {}

    async def run(self, inbox: Inbox, lost_at: float, channels: Iterable[int] = ()) -> int:
        """Read what arrived after the newest message stored before ``lost_at`` (looking
        in ``channels`` too); return how many history messages were handed over.

        Every channel is tried; ``CatchUpIncomplete`` is raised at the end if one could not be
        read or one of its messages stored, so the caller tries the pass again.
        """
        async with self._lock:  # one pass at a time
            since = self._now() - self._scope.max_age
            cutoff = discord.utils.time_snowflake(datetime.fromtimestamp(since, UTC))
            starts = await self._starts(inbox, lost_at, cutoff)
            for channel_id in channels:
                starts.setdefault(channel_id, cutoff)
            seen, failed = 0, []
            for channel_id, after in starts.items():
                try:
                    seen += await self._read(channel_id, after)
                except (discord.Forbidden, discord.NotFound) as exc:
                    log.info("discord: no catch-up in channel %s: %s", channel_id, exc)
                except (
                    discord.HTTPException,
                    aiohttp.ClientError,
                    OSError,
                    CatchUpIncomplete,
                ) as exc:
                    log.warning("discord: catch-up in channel %s failed: %s", channel_id, exc)
                    failed.append(channel_id)
            if seen:
                log.info("discord: caught up on %d messages in %d channels", seen, len(starts))
            if failed:
                raise CatchUpIncomplete(f"{len(failed)} channels to read again")
            return seen

    async def _starts(self, inbox: Inbox, lost_at: float, cutoff: int) -> dict[int, int]:
        """Channel id -> the message id to read after."""
        starts: dict[int, int] = {}
        # Chats quiet for a while (a DM from last week) can have news too.
        candidates_since = lost_at - CANDIDATE_DAYS * 86_400
        for last in await inbox.last_seen(PLATFORM, candidates_since, lost_at, MAX_CHATS):
            chat = last.thread_id or last.chat_id
            if chat.isdigit():
                mid = int(last.platform_message_id) if last.platform_message_id.isdigit() else 0
                starts[int(chat)] = max(cutoff, mid)
        access = self._scope.access
        for cid in access.channels:
            starts.setdefault(int(cid), cutoff)
        for channel in self._guild_channels(access):
            last_id = channel.last_message_id
            if last_id is not None and last_id > starts.get(channel.id, cutoff):
                starts.setdefault(channel.id, cutoff)
        return starts

    def _guild_channels(self, access: Access) -> Iterator[discord.TextChannel | discord.Thread]:
        """Readable channels and threads; under the allowed ones when only those admit."""
        for guild in self._client().guilds:
            me = guild.me
            found: list[discord.TextChannel | discord.Thread] = [
                *guild.text_channels,
                *guild.threads,
            ]
            for channel in found:
                if access.by_channel_only and not _under(channel, access.channels):
                    continue
                if me is None or channel.permissions_for(me).read_message_history:
                    yield channel

    async def _read(self, channel_id: int, after: int) -> int:
        client = self._client()
        channel = client.get_channel(channel_id)
        if channel is None:
            channel = await client.fetch_channel(channel_id)
        if not isinstance(channel, discord.abc.Messageable):
            return 0  # a category: its channels are read on their own
        missed: list[discord.Message] = []
        async for message in channel.history(limit=MAX_PER_CHANNEL):  # newest first
            if message.id <= after:
                break
            missed.append(message)
        else:
            if len(missed) >= MAX_PER_CHANNEL:
                log.warning(
                    "discord: channel %s had more than %d missed messages; read the newest",
                    channel_id,
                    MAX_PER_CHANNEL,
                )
        for message in reversed(missed):
            try:
                await self._ingest(message, live=False)
            except Exception as exc:
                tries = self._failures.get(message.id, 0) + 1
                if tries < MAX_TRIES:
                    self._failures[message.id] = tries
                    # Stop this channel here: its later messages must not overtake it.
                    raise CatchUpIncomplete(f"message {message.id} not stored: {exc}") from exc
                log.exception("discord: message %s could not be stored; skipped", message.id)
            self._failures.pop(message.id, None)
        return len(missed)


def _under(channel: discord.TextChannel | discord.Thread, allowed: frozenset[str]) -> bool:
    ids = {str(channel.id), str(getattr(channel, "parent_id", "") or "")}
    ids.add(str(getattr(channel, "category_id", "") or ""))
    parent = getattr(channel, "parent", None)
    if parent is not None:
        ids.add(str(getattr(parent, "category_id", "") or ""))
    return bool(ids & allowed)
