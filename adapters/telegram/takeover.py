"""The final reply takes over its streamed preview: the group message is edited, not resent.

A reply whose ``preview_id`` names the message a group preview was shown in
(``adapters.telegram.preview``) becomes that message: its first part is an
``editMessageText`` of it (formatted, and with the keyboard when it is the reply's only
part). An edit to the text the message already shows is Telegram's "message is not
modified", which here means done: the final was shown before a restart or a retry, and is
not shown twice. A message that cannot be edited any more (deleted, too old, a refusal
even in plain text) is removed if it can be, and the part is sent new instead
(``TakeOver.edit`` returns None). ``RetryAfter`` is waited out as for a send.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from telegram import Bot, InlineKeyboardMarkup
from telegram.error import BadRequest, Forbidden, RetryAfter, TelegramError

from adapters.telegram.format import Chunk, plain_chunk
from core.errors import DeliveryError, DeliveryRateLimited
from core.messages import OutboundMessage
from core.retry import RetryPolicy, retry_async

log = logging.getLogger(__name__)


def not_modified(exc: BadRequest) -> bool:
    """Telegram refused an edit because the message already reads so (only its
    description says so: no error code or class tells it apart)."""
    return "message is not modified" in exc.message.lower()


class TakeOver:
    """See the module docstring. ``waits`` is how 429s are waited out and ``pause`` the
    pause one names, as for sends (``adapters.telegram.send``)."""

    def __init__(self, bot: Bot, waits: RetryPolicy, pause: Callable[[RetryAfter], float]) -> None:
        self._bot = bot
        self._waits = waits
        self._pause = pause

    async def edit(
        self, msg: OutboundMessage, chunk: Chunk, markup: InlineKeyboardMarkup | None
    ) -> str | None:
        """Edit ``msg.preview_id`` into ``chunk``: its id, or None to send the part new."""
        assert msg.preview_id is not None
        if not msg.preview_id.isdigit():
            return None
        message_id = int(msg.preview_id)
        for candidate in [chunk, plain_chunk(chunk)] if chunk.entities else [chunk]:
            try:
                await retry_async(
                    functools.partial(self._edit_once, msg, message_id, candidate, markup),
                    policy=self._waits,
                    retry_on=(DeliveryRateLimited,),
                )
            except (BadRequest, Forbidden) as exc:
                log.warning("telegram: the preview could not take the reply (%s)", exc)
                continue
            return msg.preview_id
        await self._remove(int(msg.chat_id), message_id)
        return None

    async def _edit_once(
        self,
        msg: OutboundMessage,
        message_id: int,
        chunk: Chunk,
        markup: InlineKeyboardMarkup | None,
    ) -> None:
        try:
            await self._bot.edit_message_text(
                chunk.text,
                chat_id=int(msg.chat_id),
                message_id=message_id,
                entities=list(chunk.entities) or None,
                reply_markup=markup,
            )
        except BadRequest as exc:
            if not not_modified(exc):
                raise
        except RetryAfter as exc:
            pause = self._pause(exc)
            raise DeliveryRateLimited("telegram: rate-limited", retry_after=pause) from exc
        except Forbidden:
            raise
        except TelegramError as exc:  # the network, Telegram's 5xx: the outbox retries
            raise DeliveryError(f"telegram: {exc}") from exc

    async def _remove(self, chat_id: int, message_id: int) -> None:
        """A preview that cannot become the reply is not left beside it, if it can go."""
        try:
            await self._bot.delete_message(chat_id, message_id)
        except TelegramError as exc:
            log.info("telegram: an old preview message stays (%s)", exc.__class__.__name__)
