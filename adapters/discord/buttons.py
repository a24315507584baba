"""Buttons under a reply on Discord: one action row, and a click read as a command.

- **Sending.** A reply's ``actions`` become buttons under its last message (a deny
  red, an approve green, anything else blue), each with the command as its
  ``custom_id``. Discord allows 100 characters of it: a longer command travels as a
  short token (``#`` and a digest) kept in memory, so after a restart such a button
  answers that it expired. discord.py is handed the buttons as a view it must not keep:
  clicks are read by ``custom_id`` from every INTERACTION_CREATE (``on_interaction``),
  so a button sent before a restart works after it, and no view waits in memory.
- **A click** becomes the command's text from the person who clicked, in the channel of
  the message, under a dedup key of the interaction's id (a redelivered event is not
  taken twice); it passes the access policy as a typed message would. Discord wants an
  answer within 3 seconds: once stored, the click is answered by updating the message
  without its buttons (type 7), so the same choice cannot be made twice; if storing
  takes longer, the click is acknowledged first (type 6) and the buttons removed by an
  edit after. Someone the policy keeps out is told privately (an ephemeral message),
  and the buttons stay for those who may click them.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence

import aiohttp
import discord

from adapters.discord.messages import Place, place_of_interaction
from core.access import TurnedAway
from core.messages import ReplyAction
from core.store.records import Accepted

log = logging.getLogger(__name__)

MAX_CUSTOM_ID = 100
MAX_LABEL = 80
TOKEN_PREFIX = "#"  # never the start of a command
REMEMBERED_TOKENS = 4096
# Answer with the update itself if the click is stored this soon; acknowledge first
# otherwise (Discord counts its 3 seconds from when it sent the event).
ACK_AFTER_SECONDS = 1.2
REFUSAL = "Sorry, only people this bot's owner has allowed can use these buttons."
EXPIRED = "This button has expired; please type the command instead."
NOT_STORED = "Sorry, I could not take that just now. Please try again."

# (interaction, the place, the command, the id of the message clicked) -> the admission
Submit = Callable[[discord.Interaction, Place, str, str], Awaitable[Accepted | TurnedAway]]
Errors = (discord.HTTPException, aiohttp.ClientError, OSError)


class Buttons:
    """Views for replies, and the commands their buttons stand for."""

    def __init__(self) -> None:
        self._tokens: OrderedDict[str, str] = OrderedDict()

    def view(self, actions: Sequence[ReplyAction]) -> discord.ui.View | None:
        if not actions:
            return None
        view = discord.ui.View(timeout=None)
        for action in actions:
            button: discord.ui.Button[discord.ui.View] = discord.ui.Button(
                label=action.label[:MAX_LABEL],
                custom_id=self._custom_id(action.command),
                style=_style(action.command),
            )
            view.add_item(button)
        # Sent for its components only: a stopped view is not kept by discord.py to
        # dispatch clicks to (``on_interaction`` reads them by custom_id instead).
        view.stop()
        return view

    def command(self, custom_id: str) -> str | None:
        """The command a button's ``custom_id`` stands for; None if forgotten."""
        if custom_id.startswith(TOKEN_PREFIX):
            return self._tokens.get(custom_id)
        return custom_id or None

    def _custom_id(self, command: str) -> str:
        if len(command) <= MAX_CUSTOM_ID and not command.startswith(TOKEN_PREFIX):
            return command
        token = TOKEN_PREFIX + hashlib.blake2s(command.encode(), digest_size=16).hexdigest()
        self._tokens[token] = command
        self._tokens.move_to_end(token)
        while len(self._tokens) > REMEMBERED_TOKENS:
            self._tokens.popitem(last=False)
        return token


def _style(command: str) -> discord.ButtonStyle:
    word = command.split(maxsplit=1)[0].lower() if command.strip() else ""
    if word == "/deny":
        return discord.ButtonStyle.danger
    if word == "/approve":
        return discord.ButtonStyle.success
    return discord.ButtonStyle.primary


class Clicks:
    """Take a click into the inbox and answer its interaction (see the module docstring)."""

    def __init__(self, buttons: Buttons, submit: Submit) -> None:
        self._buttons = buttons
        self._submit = submit

    async def handle(self, interaction: discord.Interaction) -> None:
        if interaction.type is not discord.InteractionType.component:
            return  # slash commands are the command tree's
        data: Mapping[str, object] = interaction.data or {}
        custom_id = str(data.get("custom_id", ""))
        command = self._buttons.command(custom_id)
        if command is None or interaction.message is None:
            await _tell(interaction, EXPIRED)
            return
        place = place_of_interaction(interaction)
        message_id = str(interaction.message.id)
        submit = asyncio.ensure_future(self._submit(interaction, place, command, message_id))
        done, _ = await asyncio.wait({submit}, timeout=ACK_AFTER_SECONDS)
        acknowledged = False
        if not done:
            acknowledged = await _acknowledge(interaction)
        try:
            admission = await submit
        except Exception:
            log.exception("discord: click %s not stored", interaction.id)
            await _tell(interaction, NOT_STORED)
            return
        if isinstance(admission, TurnedAway):
            await _tell(interaction, admission.reply or REFUSAL)
        elif admission.created:
            await _remove_buttons(interaction, acknowledged=acknowledged)


async def _acknowledge(interaction: discord.Interaction) -> bool:
    """Type 6: the click is taken, the message stays as it is for now."""
    try:
        await interaction.response.defer()
    except Errors as exc:
        log.warning("discord: could not acknowledge click %s: %s", interaction.id, exc)
        return False
    return True


async def _remove_buttons(interaction: discord.Interaction, *, acknowledged: bool) -> None:
    try:
        if interaction.response.is_done() or acknowledged:
            await interaction.edit_original_response(view=None)
        else:
            await interaction.response.edit_message(view=None)  # type 7
    except Errors as exc:  # already answered (a redelivery), or the message is gone
        log.info("discord: buttons of click %s not removed: %s", interaction.id, exc)


async def _tell(interaction: discord.Interaction, text: str) -> None:
    """A message only the clicker sees."""
    try:
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True)
        else:
            await interaction.response.send_message(text, ephemeral=True)
    except Errors as exc:
        log.warning("discord: could not answer click %s: %s", interaction.id, exc)
