"""From a Discord message (or slash command) to a stored ``InboundMessage``.

- **Order.** Messages of one channel are taken one at a time, in the order discord.py
  delivered them (it runs each handler as its own task, and a download can take a
  while): a photo and the question about it reach the agent in that order.
- **Refusals.** Someone not allowed who addresses the bot live gets one polite
  refusal an hour; history read by the catch-up never refuses.
- **Roles in history.** Messages read from history carry no roles; when roles could
  admit their author, the member record is fetched before refusing.
- **Attachments** are downloaded (up to a size cap) and named in the text; images
  (an ``image/*`` content type) are marked so, for a vision model, and voice messages
  and audio files, to be transcribed.
- **Typing** shows while turns of the channel are running, one loop per channel.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path

import aiohttp
import discord

from adapters.attachments import not_downloaded, save_attachment, too_big
from adapters.discord.messages import Access, Ignored, Incoming, Place, decide
from adapters.discord.send import usable
from adapters.typing_indicator import TypingIndicator
from core.access import TurnedAway
from core.inbox import Inbox
from core.media.images import is_image_mime
from core.messages import Attachment, AttachmentKind, InboundMessage
from core.store.records import Accepted
from core.tasks import TaskSet

log = logging.getLogger(__name__)

PLATFORM = "discord"
TYPING_EVERY_SECONDS = 8.0  # Discord shows typing for 10 s


@dataclasses.dataclass(slots=True)
class _Queue:
    """One channel's messages, taken in arrival order."""

    lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    users: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class IngestRules:
    access: Access
    require_mention: bool
    allow_bots: bool
    max_file_bytes: int
    cache_dir: Path


class Ingester:
    """See the module docstring."""

    def __init__(
        self,
        client: Callable[[], discord.Client],
        inbox: Inbox,
        rules: IngestRules,
        tasks: TaskSet,
        *,
        now: Callable[[], float],
    ) -> None:
        self._client = client
        self._inbox = inbox
        self._rules = rules
        self._tasks = tasks
        self._now = now
        self._order: dict[int, _Queue] = {}
        self._typing = TypingIndicator(self._send_typing, tasks, every=TYPING_EVERY_SECONDS)

    async def message(self, message: discord.Message, *, live: bool) -> None:
        """Store ``message`` if it is for the agent; raise if it could not be stored."""
        channel = message.channel.id
        turn = self._order.setdefault(channel, _Queue())  # joined before any await
        turn.users += 1
        try:
            async with turn.lock:
                await self._take(message, live=live)
        finally:
            turn.users -= 1
            if not turn.users:
                del self._order[channel]  # nobody waits: do not keep one per channel

    async def _take(self, message: discord.Message, *, live: bool) -> None:
        me = self._client().user
        if me is None:  # the client was replaced meanwhile: the catch-up reads it again
            raise RuntimeError("discord: not connected")
        r = self._rules
        decision = decide(
            message, me.id, r.access, require_mention=r.require_mention, allow_bots=r.allow_bots
        )
        stranger = isinstance(decision, Incoming) and not decision.allowed
        if stranger and not live and await self._with_roles(message):
            decision = decide(  # again, now that the author's roles are known
                message, me.id, r.access, require_mention=r.require_mention, allow_bots=r.allow_bots
            )
        if isinstance(decision, Ignored):
            log.debug("discord: message %s ignored: %s", message.id, decision.reason)
        else:
            await self._accept(decision, live=live)

    async def _with_roles(self, message: discord.Message) -> bool:
        """Put the author's member record (roles) on a history message; True if done."""
        guild = message.guild
        if not self._rules.access.roles or guild is None:
            return False
        if isinstance(message.author, discord.Member) or message.author.bot:
            return False
        try:
            message.author = await guild.fetch_member(message.author.id)
        except discord.HTTPException:
            return False  # left the guild: no roles to admit them
        return True

    async def command(
        self, interaction: discord.Interaction, place: Place, text: str
    ) -> TurnedAway | None:
        """Store a slash command for the core; None once stored, else why it was not."""
        user = interaction.user
        msg = dataclasses.replace(
            self._inbound(place, str(user.id), user.display_name, text, str(interaction.id)),
            allow_listed=self._rules.access.allows(user, place.channel_ids),
        )
        admission = await self._inbox.accept(msg)
        return admission if isinstance(admission, TurnedAway) else None

    async def click(
        self, interaction: discord.Interaction, place: Place, text: str, message_id: str
    ) -> Accepted | TurnedAway:
        """Store a button's command as typed by whoever clicked it, as an answer to the
        message ``message_id`` the button is under."""
        user = interaction.user
        msg = dataclasses.replace(
            self._inbound(place, str(user.id), user.display_name, text, message_id),
            dedup_key=f"click:{interaction.id}",
            allow_listed=self._rules.access.allows(user, place.channel_ids),
        )
        return await self._inbox.accept(msg)

    async def _reply_to_stranger(self, place: Place, text: str) -> None:
        client = self._client()
        if not usable(client):
            return
        channel = client.get_partial_messageable(int(place.reply_channel))
        try:
            await channel.send(text)
        except (discord.HTTPException, aiohttp.ClientError, OSError, RuntimeError) as exc:
            log.warning("discord: answer to a stranger not sent: %s", exc)

    async def _accept(self, incoming: Incoming, *, live: bool) -> None:
        place = incoming.place
        msg = dataclasses.replace(
            self._inbound(place, incoming.user_id, incoming.user_name, incoming.text, ""),
            platform_message_id=str(incoming.message.id),
            dedup_key=str(incoming.message.id),
            reply_to=incoming.reply_to,
            addressed=incoming.addressed,
            allow_listed=incoming.allowed,
            replayed=not live,
        )
        # A stranger's files are not fetched: ask the policy first when there are any.
        if incoming.attachments and await self._inbox.admits(msg):
            attachments, notes = await self._download(incoming.attachments)
            text = "\n".join(p for p in (incoming.text, *notes) if p)
            msg = dataclasses.replace(
                msg, text=text or "(sent a file)", attachments=tuple(attachments)
            )
        admission = await self._inbox.accept(msg)
        if isinstance(admission, TurnedAway):
            if admission.reply and live:
                await self._reply_to_stranger(place, admission.reply)
        elif admission.created:
            self._typing.show(place.reply_channel, self._inbox.replies(admission.item))

    def _inbound(
        self, place: Place, user_id: str, user_name: str, text: str, message_id: str
    ) -> InboundMessage:
        return InboundMessage(
            platform=PLATFORM,
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

    async def _download(
        self, files: list[discord.Attachment]
    ) -> tuple[list[Attachment], list[str]]:
        attachments: list[Attachment] = []
        notes: list[str] = []
        folder = self._rules.cache_dir / "discord"
        for file in files:
            if file.size > self._rules.max_file_bytes:
                notes.append(too_big(file.filename))
                continue
            mime = file.content_type or "application/octet-stream"
            try:
                data = await file.read()
                attachment, note = await save_attachment(
                    folder, str(file.id), file.filename, mime, data, attachment_kind(file, mime)
                )
            except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
                log.warning("discord: could not download %s: %s", file.filename, exc)
                notes.append(not_downloaded(file.filename))
                continue
            attachments.append(attachment)
            notes.append(note)
        return attachments, notes

    async def _send_typing(self, channel_id: str) -> None:
        # The current client each time: it is replaced after a deaf connection.
        client = self._client()
        if usable(client):
            await client.get_partial_messageable(int(channel_id)).typing()


def attachment_kind(file: discord.Attachment, mime: str) -> AttachmentKind:
    """A voice message (recorded in the app: it has a waveform) or another audio file,
    for the transcriber; an image (``image/*``) for a vision model; anything else a file."""
    if is_image_mime(mime):
        return "image"
    if file.is_voice_message():
        return "voice"
    return "audio" if mime.lower().startswith("audio/") else "file"
