"""Sending one reply to Telegram: Markdown to formatted chunks, each sent at most once.

A reply becomes one message per chunk (``adapters.telegram_format``). A chunk whose
formatting Telegram rejects is resent plain, a vanished topic falls back to the chat,
``RetryAfter`` is waited out; a blocked bot or another permanent refusal makes the
reply ``Undeliverable`` (and the chat is not tried again until the person writes),
anything else a ``DeliveryError`` the outbox retries. Chunks already sent before a
failure are skipped on the retry, after a restart too (``adapters.reply_parts``).
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from datetime import timedelta

from telegram import Bot, ReplyParameters
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    NetworkError,
    RetryAfter,
    TelegramError,
)
from telegram.warnings import PTBDeprecationWarning

from adapters.reply_parts import PartProgress
from adapters.telegram_format import Chunk, plain_chunk, render
from core.errors import DeliveryError, Undeliverable
from core.messages import OutboundMessage

log = logging.getLogger(__name__)

SEND_ATTEMPTS = 5
MAX_RETRY_AFTER_SECONDS = 300.0


class ReplySender:
    """See the module docstring."""

    def __init__(self, bot: Bot) -> None:
        self._bot = bot
        self.progress = PartProgress()
        # Chats whose person blocked the bot: not tried again until they write again.
        self._unreachable: set[str] = set()

    def reachable_again(self, chat_id: str) -> None:
        self._unreachable.discard(chat_id)

    async def send(self, msg: OutboundMessage) -> str | None:
        """Send a reply as one or more messages; raise ``DeliveryError`` to retry later."""
        if msg.chat_id in self._unreachable:
            raise Undeliverable(f"telegram chat {msg.chat_id}: the bot was blocked")

        async def one(index: int, chunk: Chunk) -> str:
            return await self._send_chunk(msg, chunk, msg.reply_to if index == 0 else None)

        return await self.progress.send(msg, render(msg.text), one)

    async def _send_chunk(self, msg: OutboundMessage, chunk: Chunk, reply_to: str | None) -> str:
        thread = int(msg.thread_id) if msg.thread_id else None
        reply = (
            ReplyParameters(int(reply_to), allow_sending_without_reply=True)
            if reply_to and reply_to.isdigit()
            else None
        )
        for _attempt in range(SEND_ATTEMPTS):
            try:
                sent = await self._bot.send_message(
                    int(msg.chat_id),
                    chunk.text,
                    entities=list(chunk.entities) or None,
                    message_thread_id=thread,
                    reply_parameters=reply,
                )
                return str(sent.message_id)
            except RetryAfter as exc:
                await asyncio.sleep(min(retry_seconds(exc), MAX_RETRY_AFTER_SECONDS))
            except Forbidden as exc:
                self._unreachable.add(msg.chat_id)
                raise Undeliverable(f"telegram chat {msg.chat_id}: {exc.message}") from exc
            except ChatMigrated as exc:
                raise Undeliverable(
                    f"telegram chat {msg.chat_id} became supergroup {exc.new_chat_id}"
                ) from exc
            except BadRequest as exc:
                if chunk.entities and "entit" in exc.message.lower():
                    log.warning("telegram: formatting rejected (%s); resending plain", exc)
                    chunk = plain_chunk(chunk)
                    continue
                if thread is not None and "thread not found" in exc.message.lower():
                    thread = None  # the topic is gone: answer in the chat itself
                    continue
                # Anything else Telegram calls a bad request will not get better by retrying
                # (no rights to write, topic closed, chat not found).
                raise Undeliverable(f"telegram chat {msg.chat_id}: {exc.message}") from exc
            except (NetworkError, TelegramError) as exc:
                raise DeliveryError(f"telegram: {exc}") from exc
        raise DeliveryError("telegram: still rate-limited after several waits")


def retry_seconds(exc: RetryAfter) -> float:
    """The pause a 429 names (PTB 22 warns that its type will become ``timedelta``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value: int | float | timedelta = exc.retry_after
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)
