"""Telling a deaf Discord connection from a quiet one.

discord.py notices a socket that delivers nothing at all (its receive times out). It
does not notice one that stays "connected" while Discord's side stopped sending:
heartbeats unacknowledged, or acknowledged while no event arrives any more. The
watchdog looks every so often:

- heartbeats sent but none acknowledged for two and a half intervals: deaf;
- no event for ``silence`` seconds while in a guild: ask the gateway for the bot's
  own member record (REQUEST_GUILD_MEMBERS by id, no privileged intent), which comes
  back as an event. If it does not come back in time, deaf; if it does, the server
  was merely quiet, and nothing is reconnected.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import discord

log = logging.getLogger(__name__)

PROBE_TIMEOUT_SECONDS = 10.0
# Heartbeat intervals without an acknowledgement before the socket counts as deaf:
# two beats missed and half an interval of slack (about 100 s with Discord's 41.25 s).
UNACKED_BEATS = 2.5


class Watchdog:
    """Calls ``heal(reason)`` when the client looks deaf. See the module docstring."""

    def __init__(
        self,
        client: Callable[[], discord.Client],
        heal: Callable[[str], Awaitable[None]],
        *,
        silence: float,
    ) -> None:
        self._client = client
        self._heal = heal
        self._silence = silence
        self._last_event = time.monotonic()

    def heard(self) -> None:
        """An event arrived (any dispatch)."""
        self._last_event = time.monotonic()

    async def run(self, healthy: Callable[[], bool]) -> None:
        every = min(30.0, self._silence / 4) if self._silence > 0 else 30.0
        while True:
            await asyncio.sleep(every)  # a periodic look, not a wait for an event
            try:
                await self._look(healthy)
            except Exception:  # the watchdog must outlive any one look
                log.exception("discord: watchdog check failed")

    async def _look(self, healthy: Callable[[], bool]) -> None:
        if not healthy():
            return  # connecting: discord.py and the adapter are on it
        ws = self._client().ws
        reason = self._unacked() or await self._unanswered()
        # A reconnect during the probe made it moot: only heal the socket it was about.
        if reason is not None and healthy() and self._client().ws is ws:
            self.heard()  # the fresh connection gets a full period
            await self._heal(reason)

    def _unacked(self) -> str | None:
        ws = self._client().ws
        beat = getattr(ws, "_keep_alive", None)  # discord.py keeps ack times only here
        if beat is None or not beat.interval:
            return None
        unacked = time.perf_counter() - beat._last_ack
        if unacked > UNACKED_BEATS * beat.interval:
            return f"no heartbeat acknowledged for {unacked:.1f} s"
        return None

    async def _unanswered(self) -> str | None:
        quiet = time.monotonic() - self._last_event
        client = self._client()
        if self._silence <= 0 or quiet <= self._silence or not client.guilds:
            return None
        guild = next((g for g in client.guilds if not g.unavailable), None)
        me = client.user
        if me is None or guild is None:
            return None
        timeout = min(PROBE_TIMEOUT_SECONDS, max(self._silence, 1.0))
        try:
            await asyncio.wait_for(guild.query_members(user_ids=[me.id], cache=False), timeout)
        except (TimeoutError, discord.ClientException, RuntimeError, OSError) as exc:
            # OSError covers aiohttp's reset connection: the socket is going anyway.
            return f"no event for {quiet:.0f} s and no answer to a probe ({exc.__class__.__name__})"
        log.debug("discord: quiet for %.0f s, but the gateway answers", quiet)
        self.heard()
        return None
