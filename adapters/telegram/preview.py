"""Replies shown on Telegram while they are generated (``core.streaming``).

- **Private chats**: ``sendMessageDraft``, Telegram's animated draft, one ``draft_id``
  per turn. A draft is ephemeral (Telegram shows it for about 30 seconds and then drops
  it), so nothing takes it over: ``close`` returns None and the final reply is an
  ordinary ``sendMessage``; there is nothing to delete either.
- **Groups, supergroups and forum topics**: the first update is a ``sendMessage`` (plain
  text, in the message's topic, as a reply to the person's message, like the final),
  recorded with ``DeliveryLedger.preview_shown`` before it is ever edited; later updates
  are ``editMessageText``. The final reply edits the message into its first part
  (``adapters.telegram.takeover``). A turn run again after a crash streams into the
  message its first run left (``PreviewRequest.resume_id``); ``remove`` deletes it.

``adapters.preview.PacedPreview`` paces the updates with one ``PreviewPacer`` for the
bot: at most one a second per chat, within ``telegram.stream_updates_per_second``
across chats. Telegram's ``RetryAfter`` holds the chat for the pause it names; any other
refusal is a ``DeliveryError`` (logged without the text by the paced preview).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TypeVar

from telegram import Bot, Message, ReplyParameters
from telegram.error import BadRequest, RetryAfter, TelegramError

from adapters.preview import ELLIPSIS, PacedPreview, PreviewPacer, PreviewSurface
from adapters.telegram.api_errors import rate_limit_pause
from adapters.telegram.takeover import not_modified
from core.errors import DeliveryError, DeliveryRateLimited
from core.ledger import DeliveryLedger
from core.streaming import Preview, PreviewRequest
from core.tasks import TaskSet

log = logging.getLogger(__name__)

T = TypeVar("T")
# Telegram counts a message's length in UTF-16 code units.
LIMIT_UTF16 = 4096
INTERVAL_SECONDS = 1.0


class TelegramPreviews:
    """The adapter's ``core.streaming.Previews`` (see the module docstring)."""

    def __init__(self, bot: Bot, tasks: TaskSet, *, per_second: float) -> None:
        self._bot = bot
        self._tasks = tasks
        self._pacer = PreviewPacer(interval=INTERVAL_SECONDS, per_second=per_second)
        self.ledger: DeliveryLedger | None = None  # the adapter's, once it has started

    def open(self, request: PreviewRequest) -> Preview | None:
        if self.ledger is None:
            return None
        msg = request.message
        surface: PreviewSurface
        if msg.is_group:
            surface = MessagePreview(self._bot, self.ledger, request)
        else:
            surface = DraftPreview(self._bot, request)
        return PacedPreview(surface, self._pacer, msg.chat_id, self._tasks, limit=LIMIT_UTF16)


def previews_for(bot: Bot, tasks: TaskSet, per_second: float | None) -> TelegramPreviews | None:
    """The bot's previews, or None when replies arrive whole (``telegram.streaming: off``)."""
    return None if per_second is None else TelegramPreviews(bot, tasks, per_second=per_second)


class DraftPreview:
    """A private chat's preview: a draft, replaced by the final's own message."""

    def __init__(self, bot: Bot, request: PreviewRequest) -> None:
        msg = request.message
        self._bot = bot
        self._chat = int(msg.chat_id)
        self._thread = int(msg.thread_id) if msg.thread_id else None
        # Unique per turn and never 0 (inbox ids start at 1); the same when a turn runs
        # again, so its draft goes on changing rather than starting over.
        self._draft_id = request.inbox_id

    async def show(self, text: str) -> None:
        await _translated(
            self._bot.send_message_draft(
                self._chat, self._draft_id, fit(text), message_thread_id=self._thread
            )
        )

    async def close(self) -> str | None:
        return None

    async def remove(self) -> None:
        """Nothing to remove: Telegram drops a draft no update renews."""


class MessagePreview:
    """A group's preview: one message, sent once, recorded, then edited."""

    def __init__(self, bot: Bot, ledger: DeliveryLedger, request: PreviewRequest) -> None:
        msg = request.message
        self._bot = bot
        self._ledger = ledger
        self._inbox_id = request.inbox_id
        self._chat = int(msg.chat_id)
        self._thread = int(msg.thread_id) if msg.thread_id else None
        reply_to = msg.platform_message_id
        self._reply = (
            ReplyParameters(int(reply_to), allow_sending_without_reply=True)
            if reply_to and reply_to.isdigit()
            else None
        )
        resumed = request.resume_id
        self._id = int(resumed) if resumed and resumed.isdigit() else None
        self._recorded = self._id is not None  # a resumed id came from the ledger

    async def show(self, text: str) -> None:
        if self._id is None:
            sent: Message = await _translated(
                self._bot.send_message(
                    self._chat,
                    fit(text),
                    message_thread_id=self._thread,
                    reply_parameters=self._reply,
                )
            )
            self._id = sent.message_id
            await self._record()
            return
        await self._record()  # not edited before it is recorded: a restart finds it
        await _translated(self._edit(self._id, fit(text)))

    async def _edit(self, message_id: int, text: str) -> None:
        try:
            await self._bot.edit_message_text(text, chat_id=self._chat, message_id=message_id)
        except BadRequest as exc:
            if not not_modified(exc):  # a resumed turn may show what it showed before
                raise

    async def _record(self) -> None:
        if not self._recorded and self._id is not None:
            await self._ledger.preview_shown(self._inbox_id, str(self._id))
            self._recorded = True

    async def close(self) -> str | None:
        return str(self._id) if self._id is not None else None

    async def remove(self) -> None:
        if self._id is None:
            return
        try:
            await self._bot.delete_message(self._chat, self._id)
        except TelegramError as exc:
            log.warning("telegram: a preview message stays (%s)", exc.__class__.__name__)


async def _translated(call: Awaitable[T]) -> T:
    """``call``'s result; Telegram's refusals as chatgate's (``DeliveryRateLimited`` for a 429)."""
    try:
        return await call
    except RetryAfter as exc:
        pause = rate_limit_pause(exc)
        raise DeliveryRateLimited("telegram: preview rate-limited", retry_after=pause) from exc
    except TelegramError as exc:
        raise DeliveryError(f"telegram: preview refused ({exc.__class__.__name__})") from exc


def fit(text: str) -> str:
    """At most ``LIMIT_UTF16`` UTF-16 code units: the end of a longer text, after an
    ellipsis (``PacedPreview`` cuts at that many characters; one above U+FFFF is two units)."""
    if len(text.encode("utf-16-le")) // 2 <= LIMIT_UTF16:
        return text
    units = len(ELLIPSIS)
    start = len(text)
    while start > 0:
        units += 2 if ord(text[start - 1]) > 0xFFFF else 1
        if units > LIMIT_UTF16:
            break
        start -= 1
    return ELLIPSIS + text[start:]
