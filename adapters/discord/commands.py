"""The core's chat commands as Discord slash commands.

Generated from the core registry (``Inbox.command_menu``), each with one optional
``arguments`` text option (``/memory`` + ``approve all``). An invocation becomes the
inbound message ``/name arguments``, committed to the inbox under the interaction's
id. Discord wants an answer within 3 seconds: the reply itself when the command is
quick, else a deferral ("thinking…") that the reply later replaces.

Commands are registered globally at start, only when they differ from what Discord
already has (bulk overwrites are rate-limited per day).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import discord
from discord import app_commands

from adapters.discord.messages import Place, place_of_interaction
from adapters.discord.send import Interactions, OpenInteraction
from core.access import TurnedAway

log = logging.getLogger(__name__)

# Answer directly if the reply is ready this soon; defer otherwise. Discord counts its
# 3 seconds from when it sent the interaction, so network time must fit in the rest.
DEFER_AFTER_SECONDS = 1.2
_NAME = re.compile(r"^[-_a-z0-9]{1,32}$")

REFUSAL = "Sorry, I can only talk with people this bot's owner has allowed."
NOT_STORED = "Sorry, I could not take that command just now. Please try again."

# (interaction, the place, the command text) -> None once stored for the core, else why
# the access policy turned it away.
Submit = Callable[[discord.Interaction, Place, str], Awaitable[TurnedAway | None]]


class SlashCommands:
    """See the module docstring."""

    def __init__(self, interactions: Interactions, submit: Submit) -> None:
        self._interactions = interactions
        self._submit = submit
        self._synced = False

    def install(
        self, tree: app_commands.CommandTree[discord.Client], menu: list[tuple[str, str]]
    ) -> None:
        tree.clear_commands(guild=None)
        for name, summary in menu:
            if _NAME.match(name):
                tree.add_command(self._command(name, summary))

    def _command(self, name: str, summary: str) -> app_commands.Command[Any, ..., None]:
        async def invoked(interaction: discord.Interaction, arguments: str | None = None) -> None:
            await self.handle(interaction, f"/{name} {arguments or ''}".strip())

        command: app_commands.Command[Any, ..., None] = app_commands.Command(
            name=name, description=(summary or name)[:100], callback=invoked
        )
        return app_commands.describe(arguments="what follows the command, if anything")(command)

    async def handle(self, interaction: discord.Interaction, text: str) -> None:
        """Store the command; answer with its reply if that comes quickly, else defer.

        The clock starts when the interaction arrives: a slow commit (a busy database)
        eats into Discord's 3 seconds, so the deferral does not wait for it.
        """
        entry = self._interactions.open(interaction)
        place = place_of_interaction(interaction)
        submit = asyncio.ensure_future(self._submit(interaction, place, text))
        deadline = asyncio.get_running_loop().time() + DEFER_AFTER_SECONDS
        done, _ = await asyncio.wait({submit}, timeout=DEFER_AFTER_SECONDS)
        if submit in done and not await self._stored(entry, submit):
            return
        try:
            left = deadline - asyncio.get_running_loop().time()
            answered = asyncio.ensure_future(entry.answered.wait())
            try:
                await asyncio.wait_for(asyncio.shield(answered), timeout=max(left, 0.0))
            except TimeoutError:
                await entry.defer()
            finally:
                answered.cancel()
        finally:
            if submit not in done:
                await self._stored(entry, submit)

    async def _stored(
        self, entry: OpenInteraction, submit: asyncio.Future[TurnedAway | None]
    ) -> bool:
        """Whether the command reached the core; if not, say so to its user alone."""
        try:
            turned_away = await submit
            if turned_away is None:
                return True
            message = turned_away.reply or REFUSAL
        except Exception:
            log.exception("discord: /command %s not stored", entry.interaction.id)
            message = NOT_STORED
        self._interactions.close(str(entry.interaction.id))
        await entry.tell_privately(message)
        return False

    async def sync(self, tree: app_commands.CommandTree[discord.Client]) -> None:
        """Register the commands with Discord, once per process and only when changed."""
        if self._synced:
            return
        wanted = sorted(
            (c.name, c.description, tuple(p.name for p in c.parameters))
            for c in tree.get_commands()
            if isinstance(c, app_commands.Command)
        )
        try:
            current = sorted(
                (c.name, c.description, tuple(o.name for o in c.options))
                for c in await tree.fetch_commands()
            )
            if current != wanted:
                await tree.sync()
                log.info("discord: registered %d slash commands", len(wanted))
            self._synced = True
        except discord.HTTPException as exc:  # a menu is a convenience: never a reason to stop
            log.warning("discord: could not register slash commands: %s", exc)
