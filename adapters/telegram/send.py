"""Sending one reply to Telegram: Markdown to formatted chunks, each sent at most once.

A reply becomes one message per chunk (``adapters.telegram.format``). A chunk whose
formatting Telegram rejects is resent plain, a vanished topic falls back to the chat
(``fallbacks``), ``RetryAfter`` is waited out; a blocked bot or another permanent refusal
makes the reply ``Undeliverable`` (and the chat is not tried again until the person writes),
anything else a ``DeliveryError`` the outbox retries. Chunks already sent before a
failure are skipped on the retry, after a restart too (``adapters.reply_parts``). A
reply's ``actions`` become an inline keyboard on its last message
(``adapters.telegram.buttons``); its files are parts of their own (``adapters.telegram.files``).
A reply that ends a streamed preview in a group takes over the preview's message instead
of sending its first part (``adapters.telegram.takeover``).
"""

from __future__ import annotations

import functools
import logging

from telegram import Bot, InlineKeyboardMarkup, ReplyParameters
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    NetworkError,
    RetryAfter,
    TelegramError,
)

from adapters.reply_parts import PartProgress
from adapters.telegram.api_errors import (
    RATE_LIMIT_WAITS,
    rate_limit_pause,
)
from adapters.telegram.buttons import Keyboards
from adapters.telegram.files import FilePart, FileSender, reply_parts
from adapters.telegram.format import Chunk, plain_chunk, render
from adapters.telegram.takeover import TakeOver
from core.errors import DeliveryError, DeliveryRateLimited, Undeliverable
from core.media.store import MediaStore
from core.messages import OutboundMessage
from core.retry import retry_async

log = logging.getLogger(__name__)


class ReplySender:
    """See the module docstring."""

    def __init__(self, bot: Bot, keyboards: Keyboards, media: MediaStore | None = None) -> None:
        self._bot = bot
        self._keyboards = keyboards
        self._files = FileSender(bot, media)
        self._takeover = TakeOver(bot, RATE_LIMIT_WAITS, rate_limit_pause)
        self.progress = PartProgress()
        # Chats whose person blocked the bot: not tried again until they write again.
        self._unreachable: set[str] = set()

    def reachable_again(self, chat_id: str) -> None:
        self._unreachable.discard(chat_id)

    async def send(self, msg: OutboundMessage) -> str | None:
        """Send a reply as one or more messages; raise ``DeliveryError`` to retry later."""
        if msg.chat_id in self._unreachable:
            raise Undeliverable(f"telegram chat {msg.chat_id}: the bot was blocked")

        chunks = render(msg.text)
        keyboard = self._keyboards.markup(msg.actions)
        # The reply's files (``adapters.telegram.files``) after its text, each one part.
        parts = reply_parts(msg, chunks, keyboard)

        async def one(index: int, chunk: Chunk | FilePart) -> str:
            if isinstance(chunk, FilePart):
                return await self._files.send(msg, chunk, msg.reply_to if index == 0 else None)
            # The buttons go under the last part, where the reply ends.
            markup = keyboard if chunk is chunks[-1] else None
            if index == 0 and msg.preview_id:
                taken = await self._takeover.edit(msg, chunk, markup)
                if taken is not None:
                    return taken
            return await self._send_chunk(msg, chunk, msg.reply_to if index == 0 else None, markup)

        return await self.progress.send(msg, parts, one)

    async def _send_chunk(
        self,
        msg: OutboundMessage,
        chunk: Chunk,
        reply_to: str | None,
        markup: InlineKeyboardMarkup | None,
    ) -> str:
        reply = (
            ReplyParameters(int(reply_to), allow_sending_without_reply=True)
            if reply_to and reply_to.isdigit()
            else None
        )
        tries = fallbacks(chunk, int(msg.thread_id) if msg.thread_id else None)
        for index, (candidate, thread) in enumerate(tries):
            try:
                return await retry_async(
                    functools.partial(self._send_once, msg, candidate, thread, reply, markup),
                    policy=RATE_LIMIT_WAITS,
                    retry_on=(DeliveryRateLimited,),
                )
            except BadRequest as exc:
                if index + 1 == len(tries):
                    raise Undeliverable(f"telegram chat {msg.chat_id}: {exc.message}") from exc
                change = _change((candidate, thread), tries[index + 1])
                log.warning("telegram: bad request (%s); resending %s", exc, change)
        raise AssertionError("fallbacks() always offers the chunk as given")

    async def _send_once(
        self,
        msg: OutboundMessage,
        chunk: Chunk,
        thread: int | None,
        reply: ReplyParameters | None,
        markup: InlineKeyboardMarkup | None,
    ) -> str:
        """One ``sendMessage``; Telegram's errors as chatgate's (``BadRequest`` is left to
        the caller, which falls back)."""
        try:
            sent = await self._bot.send_message(
                int(msg.chat_id),
                chunk.text,
                entities=list(chunk.entities) or None,
                message_thread_id=thread,
                reply_parameters=reply,
                reply_markup=markup,
            )
        except RetryAfter as exc:
            pause = rate_limit_pause(exc)
            raise DeliveryRateLimited("telegram: rate-limited", retry_after=pause) from exc
        except Forbidden as exc:
            self._unreachable.add(msg.chat_id)
            raise Undeliverable(f"telegram chat {msg.chat_id}: {exc.message}") from exc
        except ChatMigrated as exc:
            raise Undeliverable(
                f"telegram chat {msg.chat_id} became supergroup {exc.new_chat_id}"
            ) from exc
        except BadRequest:
            raise
        except (NetworkError, TelegramError) as exc:
            raise DeliveryError(f"telegram: {exc}") from exc
        return str(sent.message_id)


def fallbacks(chunk: Chunk, thread: int | None) -> list[tuple[Chunk, int | None]]:
    """What to send, in order, while Telegram answers a chunk with ``BadRequest``.

    Telegram gives every refusal the same 400 and says why only in its description, a
    text that is not part of the API. So a bad request steps down through what can be
    dropped instead: the formatting (rejected entities), then the topic (a vanished
    forum thread, tried with the formatting again), then nothing is left and the reply
    is ``Undeliverable``. The cost: a request refused for another reason (no right to
    write, an unknown chat) takes up to three more sends before giving up; a refused
    send posts nothing, so no message is sent twice. And a topic that refuses the bot
    but still exists (closed) gets its reply in the chat itself rather than none.
    """
    chunks = [chunk, plain_chunk(chunk)] if chunk.entities else [chunk]
    threads = [thread, None] if thread is not None else [None]
    return [(candidate, topic) for topic in threads for candidate in chunks]


def _change(before: tuple[Chunk, int | None], after: tuple[Chunk, int | None]) -> str:
    how = "formatted" if after[0].entities else "plain"
    return how if after[1] == before[1] else f"{how}, outside its topic"
