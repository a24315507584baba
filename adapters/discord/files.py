"""The files a reply carries, sent to Discord after its text: one message per file, the
file attached (``discord.File``) and its caption, if any, as the message's text.

Each file is one more part of the reply (``adapters.reply_parts``), so a file sent
before a failure is not sent again on the retry, after a restart too; its nonce (from
the outbox id, the part and the file id) makes Discord answer a resend within minutes
with the first message. A file over the channel's upload limit (10 MB unless the
server's boosts raise it) or whose stored copy is gone becomes one line of text naming
it instead. Errors are mapped as for text (``adapters.discord.send``).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable

import aiohttp
import discord

from core.errors import DeliveryError, Undeliverable
from core.media.store import MediaStore
from core.messages import OutboundFile, OutboundMessage

log = logging.getLogger(__name__)

NO_MENTIONS = discord.AllowedMentions.none()
ENTITY_TOO_LARGE = 40005  # "Request entity too large"


class FileSender:
    """Sends one file of a reply to its channel (see the module docstring)."""

    def __init__(self, client: Callable[[], discord.Client], media: MediaStore | None) -> None:
        self._client = client
        self._media = media

    async def send(self, msg: OutboundMessage, index: int, file: OutboundFile) -> str:
        """Send ``file``, part ``index`` of ``msg``; return the message's id."""
        channel_id = int(msg.thread_id or msg.chat_id)
        limit = self.upload_limit(channel_id)
        try:
            if file.media.size > limit:
                return await self._line(msg, index, file, too_large(file, limit))
            try:
                data = await self._read(file)
            except FileNotFoundError:
                log.warning("discord: the stored copy of file %s is gone", file.id)
                return await self._line(msg, index, file, f"[{file.name} is no longer stored]")
            try:
                return await self._attach(msg, index, file, data)
            except discord.HTTPException as exc:
                if exc.status != 413 and exc.code != ENTITY_TOO_LARGE:
                    raise
                return await self._line(msg, index, file, too_large(file, limit))
        except discord.Forbidden as exc:
            raise Undeliverable(f"discord channel {channel_id}: {exc.text or exc}") from exc
        except discord.NotFound as exc:
            raise Undeliverable(f"discord channel {channel_id} is gone") from exc
        except discord.HTTPException as exc:
            if 400 <= exc.status < 500 and exc.status != 429:
                raise Undeliverable(f"discord channel {channel_id}: {exc.text}") from exc
            raise DeliveryError(f"discord: {exc.status} {exc.text}") from exc
        except (aiohttp.ClientError, OSError, TimeoutError, RuntimeError) as exc:
            raise DeliveryError(f"discord: {exc.__class__.__name__}: {exc}") from exc

    def upload_limit(self, channel_id: int) -> int:
        """The largest upload the channel takes: its server's, else Discord's default."""
        channel = self._client().get_channel(channel_id)
        guild = getattr(channel, "guild", None)
        if isinstance(guild, discord.Guild):
            return guild.filesize_limit
        return discord.utils.DEFAULT_FILE_SIZE_LIMIT_BYTES

    async def _read(self, file: OutboundFile) -> bytes:
        if self._media is None:
            raise FileNotFoundError(file.id)
        return await self._media.read(file.media)

    async def _attach(
        self, msg: OutboundMessage, index: int, file: OutboundFile, data: bytes
    ) -> str:
        channel = self._client().get_partial_messageable(int(msg.thread_id or msg.chat_id))
        sent = await channel.send(
            file.media.caption or None,
            file=discord.File(io.BytesIO(data), filename=file.name),
            allowed_mentions=NO_MENTIONS,
            nonce=file_nonce(msg.id, index, file.id),
        )
        return str(sent.id)

    async def _line(self, msg: OutboundMessage, index: int, file: OutboundFile, text: str) -> str:
        channel = self._client().get_partial_messageable(int(msg.thread_id or msg.chat_id))
        sent = await channel.send(
            text, allowed_mentions=NO_MENTIONS, nonce=file_nonce(msg.id, index, file.id)
        )
        return str(sent.id)


def too_large(file: OutboundFile, limit: int) -> str:
    size, most = file.media.size / 1_048_576, limit / 1_048_576
    return f"[{file.name} ({size:.1f} MB) is too large to send here: the limit is {most:.0f} MB]"


def file_nonce(outbox_id: int, index: int, file_id: str) -> str:
    """At most 25 characters, the same for the same file of the same reply only."""
    return f"{outbox_id:x}.{index}.{file_id[:10]}"[-25:]
