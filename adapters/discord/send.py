"""Sending one reply to Discord: chunks of at most 2,000 characters, each sent once.

A reply becomes one message per chunk (``adapters.discord.format``): fences reopened
with their language, tables as lists. The first chunk references the message it
answers. An answer to a slash command goes through the interaction (its first
response, the deferred placeholder, then follow-ups) while the interaction lives,
else to the channel. A reply's ``actions`` become buttons under its last message
(``adapters.discord.buttons``); its files follow its text (``adapters.discord.files``).

A reply that was shown while it was generated (``preview_id``, see
``adapters.discord.preview``) takes that message over: its first chunk is an edit of
it (with the buttons, if it is also the last), unless the message is gone.

Nothing twice: each chunk carries a nonce derived from the outbox id, its index and
its text, which Discord enforces (a resend within minutes returns the first message),
and chunks already sent before a failure are skipped on the outbox's retry. Rate
limits are waited out by discord.py. Missing access, an unknown channel or a closed
DM make the reply ``Undeliverable``; server and network errors a ``DeliveryError``
the outbox retries.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp
import discord

from adapters.discord.buttons import Buttons
from adapters.discord.files import FileSender
from adapters.discord.format import render
from adapters.reply_parts import PartProgress
from core.errors import DeliveryError, Undeliverable
from core.media.store import MediaStore
from core.messages import OutboundFile, OutboundMessage

log = logging.getLogger(__name__)

# Discord accepts interaction follow-ups for 15 minutes; leave a margin.
INTERACTION_LIFETIME_SECONDS = 14 * 60
NO_MENTIONS = discord.AllowedMentions(everyone=False, users=False, roles=False, replied_user=True)
ALREADY_ACKNOWLEDGED = 40060  # "Interaction has already been acknowledged"
CANNOT_REPLY_WITHOUT_HISTORY = 160002  # a reply needs Read Message History


@dataclass(slots=True)
class OpenInteraction:
    """A slash command waiting for its answer."""

    interaction: discord.Interaction
    opened: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    deferred: bool = False
    placeholder_used: bool = False

    @property
    def expired(self) -> bool:
        return time.monotonic() - self.opened > INTERACTION_LIFETIME_SECONDS

    async def defer(self) -> None:
        """Show "thinking…" unless the answer already went out."""
        async with self.lock:
            if self.answered.is_set():
                return
            try:
                await self.interaction.response.defer(thinking=True)
            except discord.HTTPException as exc:
                if exc.code != ALREADY_ACKNOWLEDGED:
                    # Too late (Discord forgot it) or unreachable: the answer will go
                    # to the channel instead.
                    log.warning("discord: could not defer interaction: %s", exc)
                    return
            except (aiohttp.ClientError, OSError) as exc:
                log.warning("discord: could not defer interaction: %s", exc)
                return
            self.deferred = True
            self.answered.set()

    async def tell_privately(self, text: str) -> None:
        """An ephemeral answer only its user sees (a refusal, an error)."""
        async with self.lock:
            i = self.interaction
            try:
                if not self.answered.is_set():
                    await i.response.send_message(text, ephemeral=True)
                elif self.deferred and not self.placeholder_used:
                    await i.edit_original_response(content=text)  # not "thinking…" forever
                    self.placeholder_used = True
                else:
                    await i.followup.send(text, ephemeral=True)
            except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
                log.warning("discord: could not answer interaction %s: %s", i.id, exc)
            self.answered.set()

    async def send(self, text: str, view: discord.ui.View | None = None) -> str:
        buttons = _view(view)
        async with self.lock:
            i = self.interaction
            if not self.answered.is_set():
                try:
                    callback = await i.response.send_message(
                        text, allowed_mentions=NO_MENTIONS, view=buttons
                    )
                except discord.HTTPException as exc:
                    if exc.code != ALREADY_ACKNOWLEDGED:
                        raise
                    # An earlier attempt (a deferral, or this very text) went through but
                    # its answer was lost: the original response holds one or the other.
                    self.answered.set()
                    self.deferred = True
                else:
                    self.answered.set()
                    return str(callback.message_id or i.id)
            if self.deferred and not self.placeholder_used:
                edited = await i.edit_original_response(
                    content=text, allowed_mentions=NO_MENTIONS, view=buttons
                )
                self.placeholder_used = True
                return str(edited.id)
            sent = await i.followup.send(
                text, wait=True, allowed_mentions=NO_MENTIONS, view=buttons
            )
            return str(sent.id)


class Interactions:
    """Open interactions by id (the inbox's ``platform_message_id`` of the command)."""

    def __init__(self) -> None:
        self._open: dict[str, OpenInteraction] = {}

    def open(self, interaction: discord.Interaction) -> OpenInteraction:
        self._open = {k: v for k, v in self._open.items() if not v.expired}
        entry = OpenInteraction(interaction)
        self._open[str(interaction.id)] = entry
        return entry

    def get(self, interaction_id: str | None) -> OpenInteraction | None:
        entry = self._open.get(interaction_id or "")
        if entry is None or entry.expired:
            return None
        return entry

    def close(self, interaction_id: str) -> None:
        self._open.pop(interaction_id, None)


class ReplySender:
    """See the module docstring."""

    def __init__(
        self,
        client: Callable[[], discord.Client],
        interactions: Interactions,
        buttons: Buttons,
        media: MediaStore | None = None,
    ) -> None:
        self._client = client
        self._interactions = interactions
        self.buttons = buttons  # what the buttons it sends stand for: clicks read it
        self._files = FileSender(client, media)
        self.progress = PartProgress()

    async def send(self, msg: OutboundMessage) -> str | None:
        """Send a reply as one or more messages; raise ``DeliveryError`` to retry later."""
        if not usable(self._client()):
            raise DeliveryError("discord: not connected (logging in or reconnecting)")

        chunks = render(msg.text) or ([] if msg.files else ["…"])
        # The reply's files (``adapters.discord.files``) after its text, each one part.
        parts: list[str | OutboundFile] = [*chunks, *msg.files]

        async def one(index: int, chunk: str | OutboundFile) -> str:
            if isinstance(chunk, OutboundFile):
                return await self._files.send(msg, index, chunk)
            # The buttons go under the last part, where the reply ends.
            last = index == len(chunks) - 1
            view = self.buttons.view(msg.actions) if last else None
            return await self._send_chunk(msg, index, chunk, view)

        return await self.progress.send(msg, parts, one)

    async def _send_chunk(
        self, msg: OutboundMessage, index: int, chunk: str, view: discord.ui.View | None
    ) -> str:
        interaction = self._interactions.get(msg.reply_to)
        try:
            if index == 0 and msg.preview_id is not None:
                taken = await self._take_over(msg, msg.preview_id, chunk, view)
                if taken is not None:
                    return taken
            if interaction is not None:
                try:
                    return await interaction.send(chunk, view)
                except (discord.NotFound, RuntimeError):
                    # The interaction is gone (expired, Discord forgot it, or the client
                    # that received it was replaced): the channel still takes the answer.
                    self._interactions.close(str(interaction.interaction.id))
                    return await self._to_channel(msg, index, chunk, view, reference=False)
            return await self._to_channel(msg, index, chunk, view, reference=index == 0)
        except discord.Forbidden as exc:
            raise Undeliverable(f"discord channel {_target(msg)}: {exc.text or exc}") from exc
        except discord.NotFound as exc:
            raise Undeliverable(f"discord channel {_target(msg)} is gone") from exc
        except discord.HTTPException as exc:
            if 400 <= exc.status < 500 and exc.status != 429:
                raise Undeliverable(f"discord channel {_target(msg)}: {exc.text}") from exc
            raise DeliveryError(f"discord: {exc.status} {exc.text}") from exc
        except (aiohttp.ClientError, OSError, TimeoutError, RuntimeError) as exc:
            # RuntimeError: the client's session closed under us (it is being replaced).
            raise DeliveryError(f"discord: {exc.__class__.__name__}: {exc}") from exc

    async def _take_over(
        self, msg: OutboundMessage, preview_id: str, chunk: str, view: discord.ui.View | None
    ) -> str | None:
        """Edit the preview message into the first chunk; None when it is gone (deleted
        meanwhile: the chunk is sent new). An edit to the same text is no error, so a
        retry after a lost answer edits it again, harmlessly."""
        if not preview_id.isdigit():
            return None
        channel = self._client().get_partial_messageable(int(_target(msg)))
        try:
            edited = await channel.get_partial_message(int(preview_id)).edit(
                content=chunk, allowed_mentions=NO_MENTIONS, view=_view(view)
            )
        except discord.NotFound:
            return None
        return str(edited.id)

    async def _to_channel(
        self,
        msg: OutboundMessage,
        index: int,
        chunk: str,
        view: discord.ui.View | None,
        *,
        reference: bool,
    ) -> str:
        channel_id = int(_target(msg))
        channel = self._client().get_partial_messageable(channel_id)
        nonce_ = nonce(msg.id, index, chunk)
        buttons = _view(view)
        if reference and msg.reply_to and msg.reply_to.isdigit():
            ref = discord.MessageReference(
                message_id=int(msg.reply_to), channel_id=channel_id, fail_if_not_exists=False
            )
            try:
                sent = await channel.send(
                    chunk, reference=ref, allowed_mentions=NO_MENTIONS, nonce=nonce_, view=buttons
                )
                return str(sent.id)
            except discord.HTTPException as exc:
                if exc.code != CANNOT_REPLY_WITHOUT_HISTORY:
                    raise
                # Without Read Message History a reply cannot quote: send it plain.
        sent = await channel.send(chunk, allowed_mentions=NO_MENTIONS, nonce=nonce_, view=buttons)
        return str(sent.id)


def usable(client: discord.Client) -> bool:
    """Logged in and not closed: a replaced client is neither until it has logged in."""
    return client.http.token is not None and not client.is_closed()


def nonce(outbox_id: int, index: int, text: str) -> str:
    """At most 25 characters, the same for the same chunk of the same reply only."""
    digest = hashlib.blake2s(text.encode(), digest_size=5).hexdigest()
    return f"{outbox_id:x}.{index}.{digest}"[-25:]


def _view(view: discord.ui.View | None) -> discord.ui.View:
    """The ``view`` argument: discord.py's ``MISSING`` when there are no buttons, so a
    message is sent, or an edit made, exactly as without the argument."""
    return view if view is not None else discord.utils.MISSING


def _target(msg: OutboundMessage) -> str:
    return msg.thread_id or msg.chat_id
