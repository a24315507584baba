"""The ``discord.Client`` the adapter runs: its intents, and a client that goes quiet
once retired (``RetiringClient``)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import discord


def intents(message_content: bool) -> discord.Intents:
    """Guilds, guild and DM messages, and (privileged) message content."""
    chosen = discord.Intents.none()
    chosen.guilds = True
    chosen.guild_messages = True
    chosen.dm_messages = True
    chosen.message_content = message_content
    return chosen


class RetiringClient(discord.Client):
    """A ``discord.Client`` that, once retired, dispatches no event.

    discord.py holds ``on_ready`` back in a task of its own until no GUILD_CREATE came
    for ``guild_ready_timeout``, and ``close()`` leaves that task running: a client
    closed right after READY (a stop, a replaced client) would still dispatch
    ``on_ready`` to an adapter that has moved on. Every event goes through the public
    ``dispatch``, so that is where a retired client goes quiet; ``settled`` waits for
    the held-back READY (which dispatches "connect" first and "ready" last) to be over.
    """

    def __init__(self, *, intents: discord.Intents, guild_ready_timeout: float) -> None:
        self._retired = False
        self._ready_settled = asyncio.Event()  # clear while a READY waits for its guilds
        self._ready_settled.set()
        self._hold_seconds = guild_ready_timeout
        super().__init__(intents=intents, guild_ready_timeout=guild_ready_timeout)

    def dispatch(self, event: str, /, *args: Any, **kwargs: Any) -> None:
        if event == "connect":
            self._ready_settled.clear()
        elif event == "ready":
            self._ready_settled.set()
        if not self._retired:
            super().dispatch(event, *args, **kwargs)

    def retire(self) -> None:
        """From now on, dispatch nothing (call it before ``close()``)."""
        self._retired = True

    async def settled(self) -> None:
        """Return once discord.py no longer holds a READY back (bounded by its timeout)."""
        # After close() no GUILD_CREATE arrives, so the wait ends within one timeout.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready_settled.wait(), 2 * self._hold_seconds)
