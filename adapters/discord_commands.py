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

from adapters.discord_messages import Place, place_of
from adapters.discord_send import Interactions

log = logging.getLogger(__name__)

# Answer directly if the reply is ready this soon; defer otherwise. Discord counts its
# 3 seconds from when it sent the interaction, so network time must fit in the rest.
DEFER_AFTER_SECONDS = 1.2
_NAME = re.compile(r"^[-_a-z0-9]{1,32}$")

# (interaction, the place, the command text) -> whether it was stored for the core.
Submit = Callable[[discord.Interaction, Place, str], Awaitable[bool]]


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
        command._params["arguments"].description = "what follows the command, if anything"
        return command

    async def handle(self, interaction: discord.Interaction, text: str) -> None:
        entry = self._interactions.open(interaction)
        channel = interaction.channel
        if channel is not None:
            place = place_of(channel)
        else:
            cid = str(interaction.channel_id)
            place = Place(cid, None, interaction.guild_id is not None, (cid,))
        try:
            stored = await self._submit(interaction, place, text)
        except Exception:
            log.exception("discord: /command %s not stored", interaction.id)
            stored = False
            message = "Sorry, I could not take that command just now. Please try again."
        else:
            message = "Sorry, I can only talk with people this bot's owner has allowed."
        if not stored:
            self._interactions.close(str(interaction.id))
            if not interaction.response.is_done():
                await interaction.response.send_message(message, ephemeral=True)
            return
        try:
            await asyncio.wait_for(entry.answered.wait(), timeout=DEFER_AFTER_SECONDS)
        except TimeoutError:
            await entry.defer()

    async def sync(self, tree: app_commands.CommandTree[discord.Client]) -> None:
        """Register the commands with Discord, once per process and only when changed."""
        if self._synced:
            return
        wanted = sorted(
            (c.name, c.description)
            for c in tree.get_commands()
            if isinstance(c, app_commands.Command)
        )
        try:
            current = sorted((c.name, c.description) for c in await tree.fetch_commands())
            if current != wanted:
                await tree.sync()
                log.info("discord: registered %d slash commands", len(wanted))
            self._synced = True
        except discord.HTTPException as exc:  # a menu is a convenience: never a reason to stop
            log.warning("discord: could not register slash commands: %s", exc)
