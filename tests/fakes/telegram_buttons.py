"""Inline keyboards and their taps, for ``tests.fakes.telegram_server``.

The Bot API side: ``reply_markup`` on ``sendMessage`` is checked as Telegram checks an
``InlineKeyboardMarkup`` (rows of buttons, each with a text and exactly one action;
``callback_data`` of 1 to 64 bytes, else ``BUTTON_DATA_INVALID``) and kept on the
message; ``answerCallbackQuery`` (a query is answered once; text up to 200 characters)
and ``editMessageReplyMarkup`` (an empty or missing markup removes the keyboard; the
same markup again is "message is not modified"). The test side: ``tap`` builds the
``callback_query`` update a person's tap on a button produces.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

from tests.fakes.telegram_payloads import DEFAULT_USER, Json
from tests.fakes.telegram_wire import ApiError, int_param

MAX_CALLBACK_DATA_BYTES = 64
MAX_ANSWER_CHARS = 200
QUERY_INVALID = "Bad Request: query is too old and response timeout expired or query ID is invalid"
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup "
    "are exactly the same as a current content and reply markup of the message"
)
# A button does one thing: the fields of InlineKeyboardButton that name what.
_BUTTON_ACTIONS = (
    "url",
    "callback_data",
    "web_app",
    "login_url",
    "switch_inline_query",
    "switch_inline_query_current_chat",
    "switch_inline_query_chosen_chat",
    "copy_text",
    "callback_game",
    "pay",
)


@dataclass(frozen=True, slots=True)
class CallbackAnswer:
    """An ``answerCallbackQuery`` call that Telegram accepted."""

    callback_query_id: str
    text: str | None
    show_alert: bool


@dataclass(frozen=True, slots=True)
class MarkupEdit:
    """A successful ``editMessageReplyMarkup``: the keyboard now on the message."""

    chat_id: int
    message_id: int
    reply_markup: Json | None  # None: the keyboard was removed


def checked_markup(params: Json) -> Json | None:
    """The inline keyboard of a send or edit, as Telegram validates it; None if none."""
    markup = params.get("reply_markup")
    if markup is None or markup == "":
        return None
    if not isinstance(markup, dict):
        raise ApiError(400, "Bad Request: can't parse reply keyboard markup JSON object")
    if "inline_keyboard" not in markup:
        return markup  # a reply keyboard or ForceReply: not kept on the message
    rows = markup["inline_keyboard"]
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise ApiError(400, "Bad Request: can't parse inline keyboard button: field must be Array")
    for row in rows:
        for button in row:
            _check_button(button)
    return markup if any(rows) else None


def _check_button(button: Any) -> None:
    if not isinstance(button, dict) or not button.get("text"):
        raise ApiError(
            400, "Bad Request: can't parse inline keyboard button: Text must be non-empty"
        )
    actions = [key for key in _BUTTON_ACTIONS if key in button]
    if len(actions) != 1:
        raise ApiError(400, "Bad Request: can't parse inline keyboard button")
    data = button.get("callback_data")
    if data is not None and not 1 <= len(str(data).encode()) <= MAX_CALLBACK_DATA_BYTES:
        raise ApiError(400, "Bad Request: BUTTON_DATA_INVALID")


class ButtonsMixin:
    """FakeTelegram's taps, ``answerCallbackQuery`` and ``editMessageReplyMarkup``.

    The state below is set up by ``FakeTelegram.__init__``.
    """

    bot_id: int
    messages: dict[tuple[int, int], Json]
    callback_queries: dict[str, Json]
    answered_queries: set[str]
    callback_answers: list[CallbackAnswer]
    markup_edits: list[MarkupEdit]
    _query_ids: itertools.count[int]

    def tap(self, message: Json, label: str, *, user: Json | None = None) -> Json:
        """The ``callback_query`` update of ``user`` (default ``DEFAULT_USER``) tapping
        the button labelled ``label`` under ``message`` (the bot's message, as sent)."""
        current = self.messages.get((message["chat"]["id"], message["message_id"]), message)
        rows = (current.get("reply_markup") or {}).get("inline_keyboard", [])
        button = next((b for row in rows for b in row if b["text"] == label), None)
        if button is None:
            raise LookupError(f"no button {label!r} under message {message['message_id']}")
        query_id = str(next(self._query_ids))
        query = {
            "id": query_id,
            "from": user or DEFAULT_USER,
            "message": current,
            "chat_instance": f"-{abs(current['chat']['id']) * 7 + 3}",
            "data": button["callback_data"],
        }
        self.callback_queries[query_id] = query
        return {"callback_query": query}

    async def _answer_callback_query(self, params: Json) -> bool:
        query_id = str(params.get("callback_query_id") or "")
        if query_id not in self.callback_queries or query_id in self.answered_queries:
            raise ApiError(400, QUERY_INVALID)
        text = params.get("text")
        if text is not None and len(str(text)) > MAX_ANSWER_CHARS:
            raise ApiError(400, "Bad Request: MESSAGE_TOO_LONG")
        self.answered_queries.add(query_id)
        show_alert = bool(params.get("show_alert"))
        self.callback_answers.append(CallbackAnswer(query_id, text, show_alert))
        return True

    async def _edit_message_reply_markup(self, params: Json) -> Json | bool:
        markup = checked_markup(params)
        if params.get("inline_message_id"):
            return True
        chat_id = int_param(params, "chat_id")
        key = (chat_id or 0, int_param(params, "message_id") or 0)
        original = self.messages.get(key)
        if original is None or original.get("from", {}).get("id") != self.bot_id:
            raise ApiError(400, "Bad Request: message to edit not found")
        if original.get("reply_markup") == markup:
            raise ApiError(400, NOT_MODIFIED)
        updated = {**original, "edit_date": int(time.time())}
        updated.pop("reply_markup", None)
        if markup is not None:
            updated["reply_markup"] = markup
        self.messages[key] = updated
        self.markup_edits.append(MarkupEdit(key[0], key[1], markup))
        return updated
