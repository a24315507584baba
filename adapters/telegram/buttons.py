"""Buttons under a reply on Telegram: an inline keyboard, and a tap read as a command.

- **Sending.** A reply's ``actions`` become an inline keyboard, one button a row, on the
  reply's last message. Each button's ``callback_data`` is its command (``/approve 12``).
  Telegram allows 64 bytes of it: a longer command travels as a short token (``#`` and
  a digest) kept in memory, so after a restart such a button answers with a toast
  asking for the typed command. Commands here are short, so that is rare.
- **A tap** (a ``callback_query`` update) becomes the command's text from the person
  who tapped, in the chat of the message, under a dedup key of the query's id: a
  redelivered update is not taken twice. It passes the access policy as a typed message
  would. The query is answered at once (a toast), and once the tap is taken the keyboard
  is removed, so the same choice cannot be made twice; a stranger's tap leaves it.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence

from telegram import (
    Bot,
    CallbackQuery,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
    Update,
)
from telegram.error import TelegramError

from adapters.telegram.updates import Access, BotIdentity, Ignored
from core.access import TurnedAway
from core.inbox import Inbox
from core.messages import InboundMessage, ReplyAction
from core.record import record

log = logging.getLogger(__name__)

MAX_CALLBACK_BYTES = 64
MAX_TOAST_CHARS = 200  # answerCallbackQuery's text limit
TOKEN_PREFIX = "#"  # never the start of a command
REMEMBERED_TOKENS = 4096
TAKEN = "Got it: {label}"
REFUSED = "Sorry, only people this bot's owner has allowed can use these buttons."
EXPIRED = "This button has expired; please type the command instead."


class Keyboards:
    """Inline keyboards for replies, and the commands their buttons stand for."""

    def __init__(self) -> None:
        self._tokens: OrderedDict[str, str] = OrderedDict()

    def markup(self, actions: Sequence[ReplyAction]) -> InlineKeyboardMarkup | None:
        if not actions:
            return None
        rows = [
            [InlineKeyboardButton(action.label, callback_data=self._data(action.command))]
            for action in actions
        ]
        return InlineKeyboardMarkup(rows)

    def command(self, data: str) -> str | None:
        """The command a button's ``callback_data`` stands for; None if forgotten."""
        if data.startswith(TOKEN_PREFIX):
            return self._tokens.get(data)
        return data or None

    def _data(self, command: str) -> str:
        if len(command.encode()) <= MAX_CALLBACK_BYTES and not command.startswith(TOKEN_PREFIX):
            return command
        token = TOKEN_PREFIX + hashlib.blake2s(command.encode(), digest_size=16).hexdigest()
        self._tokens[token] = command
        self._tokens.move_to_end(token)
        while len(self._tokens) > REMEMBERED_TOKENS:
            self._tokens.popitem(last=False)
        return token


@record
class Tap:
    """A button tapped under one of the bot's messages."""

    query: CallbackQuery
    chat_id: str
    message_id: int
    thread_id: int | None
    is_group: bool
    user_id: str
    user_name: str | None
    # The allow-list (``telegram.allowed_users`` / ``allowed_chats``) admits the tapper.
    allowed: bool


def decide_tap(update: Update, access: Access) -> Tap | Ignored:
    """Whether ``update`` is a tap on a button under one of the bot's messages."""
    query = update.callback_query
    if query is None:
        return Ignored("not a tap")
    message = query.message
    if message is None or query.data is None:
        return Ignored("a tap on an inline-mode message or a game")
    user = query.from_user
    if user.is_bot:
        return Ignored("not from a person")
    thread = None
    if isinstance(message, Message) and message.is_topic_message:
        thread = message.message_thread_id
    return Tap(
        query=query,
        chat_id=str(message.chat.id),
        message_id=message.message_id,
        thread_id=thread,
        is_group=message.chat.type in ("group", "supergroup"),
        user_id=str(user.id),
        user_name=user.username or user.full_name or None,
        allowed=access.admits(user, message.chat.id),
    )


class Taps:
    """Take a tap into the inbox, answer its query, and take the keyboard away."""

    def __init__(
        self,
        bot: Bot,
        keyboards: Keyboards,
        me: Callable[[], BotIdentity | None],
        now: Callable[[], float],
    ) -> None:
        self._bot = bot
        self._keyboards = keyboards
        self._me = me
        self._now = now

    async def take(self, inbox: Inbox, update: Update, access: Access) -> None:
        """Store the tapped button's command; raise if it could not be stored (Telegram
        hands the update over again). A redelivery of a stored tap does nothing."""
        tap = decide_tap(update, access)
        if isinstance(tap, Ignored):
            log.debug("telegram: update %s ignored: %s", update.update_id, tap.reason)
            return
        command = self._keyboards.command(tap.query.data or "")
        if command is None:
            await self._answer(tap, EXPIRED, alert=True)
            return
        admission = await inbox.accept(self.inbound(tap, command))
        if isinstance(admission, TurnedAway):
            # Only the tapper sees why; the keyboard stays for those who may tap it.
            await self._answer(tap, _toast(admission.reply or REFUSED), alert=True)
        elif admission.created:
            await self._answer(tap, TAKEN.format(label=_label(tap.query, command)), alert=False)
            await self._remove_keyboard(tap)

    def inbound(self, tap: Tap, command: str) -> InboundMessage:
        me = self._me()
        assert me is not None  # taps arrive only once connected
        return InboundMessage(
            platform="telegram",
            chat_id=tap.chat_id,
            user_id=tap.user_id,
            text=command,
            # The message under which it was tapped: the answer replies to it.
            platform_message_id=str(tap.message_id),
            dedup_key=f"{me.id}:tap:{tap.query.id}",
            received_at=self._now(),
            thread_id=str(tap.thread_id) if tap.thread_id is not None else None,
            user_name=tap.user_name,
            is_group=tap.is_group,
            allow_listed=tap.allowed,
        )

    async def _answer(self, tap: Tap, text: str, *, alert: bool) -> None:
        try:
            await self._bot.answer_callback_query(tap.query.id, text=text, show_alert=alert)
        except TelegramError as exc:  # too late (Telegram forgot the query): no matter
            log.warning("telegram: could not answer a tap: %s", exc)

    async def _remove_keyboard(self, tap: Tap) -> None:
        try:
            await self._bot.edit_message_reply_markup(
                chat_id=int(tap.chat_id), message_id=tap.message_id, reply_markup=None
            )
        except TelegramError as exc:  # already removed (a second tap), or the message is gone
            log.info("telegram: keyboard of message %s not removed: %s", tap.message_id, exc)


def _label(query: CallbackQuery, command: str) -> str:
    """The tapped button's label, as the message shows it (else the command)."""
    message = query.message
    markup = message.reply_markup if isinstance(message, Message) else None
    for row in markup.inline_keyboard if markup is not None else ():
        for button in row:
            if button.callback_data == query.data:
                return button.text
    return command


def _toast(text: str) -> str:
    return text if len(text) <= MAX_TOAST_CHARS else text[: MAX_TOAST_CHARS - 1] + "…"
