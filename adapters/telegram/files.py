"""The files a reply carries, sent to Telegram after (or, for a voice note, before) its
text.

Each file is one more part of the reply (``adapters.reply_parts``): sent once, never
again after a restart. An image Telegram shows as a photo (JPEG, PNG or WebP under
10 MB) goes with ``sendPhoto``, a voice note (``MediaRef.kind == "voice"``) with
``sendVoice``, anything else with ``sendDocument``. A voice note opens the reply, with
the reply's text as its caption when that fits in one (1,024 characters), else before
the text; a reply whose text already shows in a streamed preview keeps that order and
sends the voice note after it. A caption (``send_file``'s) goes under its file.

A photo Telegram refuses (its dimensions, say) is sent as a document; a caption whose
formatting it refuses, plain; a vanished topic, to the chat. A file it still refuses,
one over its 50 MB upload limit or one whose stored copy is gone becomes one line of
text naming it, so the rest of the reply still arrives. Rate limits, blocked bots and
other errors are handled as for text (``adapters.telegram.api_errors``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Sequence

from telegram import Bot, InlineKeyboardMarkup, Message, ReplyParameters
from telegram.error import BadRequest

from adapters.telegram.api_errors import RATE_LIMIT_WAITS, translated
from adapters.telegram.format import Chunk, plain_chunk, render
from core.errors import DeliveryRateLimited, Undeliverable
from core.media.store import MediaStore
from core.messages import OutboundFile, OutboundMessage
from core.record import record
from core.retry import retry_async

log = logging.getLogger(__name__)

PHOTO_MIMES = frozenset({"image/jpeg", "image/png", "image/webp"})
MAX_PHOTO_BYTES = 10_000_000
MAX_UPLOAD_BYTES = 50_000_000
CAPTION_LIMIT = 1024
# Seconds to upload one file (python-telegram-bot's 20 s default is short for 50 MB).
UPLOAD_SECONDS = 300.0


@record
class FilePart:
    """One file of a reply, with the caption and buttons that go with it."""

    file: OutboundFile
    caption: Chunk | None = None
    markup: InlineKeyboardMarkup | None = None


@record
class _Try:
    method: str  # photo | document | voice
    caption: Chunk | None
    thread: int | None


def reply_parts(
    msg: OutboundMessage, chunks: Sequence[Chunk], keyboard: InlineKeyboardMarkup | None
) -> list[Chunk | FilePart]:
    """``chunks`` (the reply's text) with its files, in the order they are sent."""
    files = [FilePart(f, _own_caption(f)) for f in msg.files]
    voice = next((part for part in files if part.file.media.kind == "voice"), None)
    if voice is None or msg.preview_id is not None:
        return [*chunks, *files]
    rest = [part for part in files if part is not voice]
    captions = render(msg.text, limit=CAPTION_LIMIT) if chunks else []
    if len(captions) == 1:  # the whole text fits under the voice note
        return [FilePart(voice.file, captions[0], keyboard), *rest]
    return [voice, *chunks, *rest]


def _own_caption(file: OutboundFile) -> Chunk | None:
    caption = file.media.caption[:CAPTION_LIMIT]
    return Chunk(caption) if caption else None


class FileSender:
    """Sends one ``FilePart`` (see the module docstring)."""

    def __init__(self, bot: Bot, media: MediaStore | None) -> None:
        self._bot = bot
        self._media = media

    async def send(self, msg: OutboundMessage, part: FilePart, reply_to: str | None) -> str:
        """Send ``part`` to ``msg``'s chat; return the sent message's id."""
        media = part.file.media
        name = part.file.name
        if media.size > MAX_UPLOAD_BYTES:
            return await self._line(msg, f"[{name} is too large for Telegram (over 50 MB)]")
        try:
            data = await self._read(part.file)
        except FileNotFoundError:
            log.warning("telegram: the stored copy of file %s is gone", part.file.id)
            return await self._line(msg, f"[{name} could not be sent: it is no longer stored]")
        reply = _reply(reply_to)
        tries = attempts(part, _method(part.file), _thread(msg))
        for index, attempt in enumerate(tries):
            try:
                return await retry_async(
                    functools.partial(self._upload, msg, part, attempt, data, reply),
                    policy=RATE_LIMIT_WAITS,
                    retry_on=(DeliveryRateLimited,),
                )
            except BadRequest as exc:
                if index + 1 == len(tries):
                    log.warning("telegram: file %s refused: %s", part.file.id, exc.message)
                    return await self._line(msg, f"[{name} could not be sent: {exc.message}]")
                log.info("telegram: file %s refused (%s); trying otherwise", part.file.id, exc)
        raise AssertionError("attempts() always offers the file as given")

    async def _read(self, file: OutboundFile) -> bytes:
        if self._media is None:
            raise FileNotFoundError(file.id)
        return await self._media.read(file.media)

    async def _upload(
        self,
        msg: OutboundMessage,
        part: FilePart,
        attempt: _Try,
        data: bytes,
        reply: ReplyParameters | None,
    ) -> str:
        methods: dict[str, Callable[..., Awaitable[Message]]] = {
            "photo": self._bot.send_photo,
            "document": self._bot.send_document,
            "voice": self._bot.send_voice,
        }
        send = methods[attempt.method]
        caption = attempt.caption or Chunk("")
        sent: Message = await translated(
            msg.chat_id,
            functools.partial(
                send,
                int(msg.chat_id),
                data,
                filename=part.file.name,
                caption=caption.text or None,
                caption_entities=list(caption.entities) or None,
                message_thread_id=attempt.thread,
                reply_parameters=reply,
                reply_markup=part.markup,
                write_timeout=UPLOAD_SECONDS,
            ),
        )
        return str(sent.message_id)

    async def _line(self, msg: OutboundMessage, text: str) -> str:
        """A line of text in place of a file that cannot be sent."""

        async def once(thread: int | None) -> str:
            call = functools.partial(
                self._bot.send_message, int(msg.chat_id), text, message_thread_id=thread
            )
            sent = await translated(msg.chat_id, call)
            return str(sent.message_id)

        thread = _thread(msg)
        for topic in [thread, None] if thread is not None else [None]:
            try:
                return await retry_async(
                    functools.partial(once, topic),
                    policy=RATE_LIMIT_WAITS,
                    retry_on=(DeliveryRateLimited,),
                )
            except BadRequest as exc:  # the topic is gone: then the chat itself
                refused = exc
        raise Undeliverable(f"telegram chat {msg.chat_id}: {refused.message}")


def attempts(part: FilePart, method: str, thread: int | None) -> list[_Try]:
    """What to send, in order, while Telegram answers ``BadRequest``: a photo then as a
    document, a formatted caption then plain, then outside a topic (see
    ``adapters.telegram.send.fallbacks`` for why by elimination)."""
    methods = [method, "document"] if method == "photo" else [method]
    caption = part.caption
    captions = [caption, plain_chunk(caption)] if caption and caption.entities else [caption]
    threads = [thread, None] if thread is not None else [None]
    return [_Try(m, c, t) for t in threads for c in captions for m in methods]


def _method(file: OutboundFile) -> str:
    media = file.media
    if media.kind == "voice":
        return "voice"
    if media.mime in PHOTO_MIMES and media.size <= MAX_PHOTO_BYTES:
        return "photo"
    return "document"


def _thread(msg: OutboundMessage) -> int | None:
    return int(msg.thread_id) if msg.thread_id else None


def _reply(reply_to: str | None) -> ReplyParameters | None:
    if reply_to and reply_to.isdigit():
        return ReplyParameters(int(reply_to), allow_sending_without_reply=True)
    return None
