"""The Bot API methods by which the bot acts, for ``tests.fakes.telegram_server``.

``getMe``, ``sendMessage`` (an inline keyboard checked by ``telegram_buttons``) and
``editMessageText`` (with ``telegram_checks``'s text and entity checks, forum thread and
reply-target checks, blocked chats answered 403; an edit keeps the keyboard it is given
and drops one it is not, and an edit that changes nothing is refused as "not modified"),
``sendChatAction``, ``setMyCommands``/``getMyCommands``/``deleteMyCommands`` per scope and
language, ``getFile`` for registered files, and ``close``/``logOut``. What the bot did is
recorded as ``SentMessage``, ``Edit`` and ``ChatAction``. The update side (``getUpdates``
and webhooks) is ``tests.fakes.telegram_updates``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tests.fakes.telegram_buttons import checked_markup
from tests.fakes.telegram_checks import CHAT_ACTIONS, check_command, checked_text
from tests.fakes.telegram_payloads import Json, StoredFile, synthetic_chat
from tests.fakes.telegram_wire import BLOCKED_BY_USER, KICKED_FROM_GROUP, ApiError, int_param

MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class SentMessage:
    """A message the bot sent with ``sendMessage``."""

    chat_id: int
    message_id: int
    text: str
    entities: list[Json] | None
    parse_mode: str | None
    message_thread_id: int | None
    reply_to_message_id: int | None
    disable_notification: bool
    link_preview_options: Json | None
    message: Json  # the Message JSON returned to the bot
    params: Json  # every parameter, decoded
    reply_markup: Json | None = None  # the inline keyboard under it, if any


@dataclass(frozen=True, slots=True)
class Edit:
    """A successful ``editMessageText``."""

    chat_id: int
    message_id: int
    text: str
    entities: list[Json] | None
    parse_mode: str | None
    reply_markup: Json | None = None  # the inline keyboard under it afterwards, if any
    at: float = field(default_factory=time.monotonic)  # when the fake received it


@dataclass(frozen=True, slots=True)
class ChatAction:
    """A ``sendChatAction`` call."""

    chat_id: int
    action: str
    message_thread_id: int | None


class MethodsMixin:
    """FakeTelegram's handlers for the methods above, and the chat checks they share.

    The state below is set up by ``FakeTelegram.__init__``.
    """

    bot_id: int
    sent: list[SentMessage]
    edits: list[Edit]
    actions: list[ChatAction]
    command_sets: dict[tuple[str, str], list[Json]]
    files: dict[str, StoredFile]
    blocked_chats: set[int]
    chats: dict[int, Json]
    messages: dict[tuple[int, int], Json]

    if TYPE_CHECKING:  # provided by FakeTelegram and MessageBuildersMixin

        @property
        def bot_user(self) -> Json: ...

        def message(
            self,
            chat: Json,
            text: str | None = None,
            *,
            sender: Json | None = None,
            entities: list[Json] | None = None,
            date: int | datetime | None = None,
            message_id: int | None = None,
            **extra: Any,
        ) -> Json: ...

    async def _no_op(self, params: Json) -> bool:
        return True

    async def _get_me(self, params: Json) -> Json:
        return self.bot_user

    async def _send_message(self, params: Json) -> Json:
        chat = self._target_chat(params)
        text, entities, parse_mode = checked_text(params)
        thread_id = self._checked_thread(chat, params)
        reply_to = self._checked_reply(chat, params)
        markup = checked_markup(params)
        keyboard = markup if markup is not None and "inline_keyboard" in markup else None
        message = self.message(chat, text, sender=self.bot_user, entities=entities, date=None)
        if keyboard is not None:
            message["reply_markup"] = keyboard
        if thread_id is not None:
            message["message_thread_id"] = thread_id
            message["is_topic_message"] = True
        if reply_to is not None:
            message["reply_to_message"] = reply_to
        self.messages[(chat["id"], message["message_id"])] = message
        self.sent.append(
            SentMessage(
                chat_id=chat["id"],
                message_id=message["message_id"],
                text=text,
                entities=entities,
                parse_mode=parse_mode,
                message_thread_id=thread_id,
                reply_to_message_id=None if reply_to is None else reply_to["message_id"],
                disable_notification=bool(params.get("disable_notification")),
                link_preview_options=params.get("link_preview_options"),
                message=message,
                params=params,
                reply_markup=keyboard,
            )
        )
        return message

    async def _edit_message_text(self, params: Json) -> Json | bool:
        if params.get("inline_message_id"):
            checked_text(params)
            return True
        chat = self._target_chat(params)
        text, entities, parse_mode = checked_text(params)
        key = (chat["id"], int_param(params, "message_id") or 0)
        original = self.messages.get(key)
        if original is None or original.get("from", {}).get("id") != self.bot_id:
            raise ApiError(400, "Bad Request: message to edit not found")
        markup = checked_markup(params)
        keyboard = markup if markup is not None and "inline_keyboard" in markup else None
        unchanged = (original.get("text"), original.get("entities"), original.get("reply_markup"))
        if unchanged == (text, entities, keyboard):
            raise ApiError(
                400,
                "Bad Request: message is not modified: specified new message content and "
                "reply markup are exactly the same as a current content and reply markup "
                "of the message",
            )
        updated = {**original, "text": text, "edit_date": int(time.time())}
        # Telegram drops the keyboard of a message edited without one.
        for name, value in (("entities", entities), ("reply_markup", keyboard)):
            updated.pop(name, None)
            if value:
                updated[name] = value
        self.messages[key] = updated
        self.edits.append(Edit(chat["id"], key[1], text, entities, parse_mode, keyboard))
        return updated

    async def _send_chat_action(self, params: Json) -> bool:
        chat = self._target_chat(params)
        action = str(params.get("action") or "")
        if action not in CHAT_ACTIONS:
            raise ApiError(400, "Bad Request: wrong parameter action in request")
        thread_id = self._checked_thread(chat, params)
        self.actions.append(ChatAction(chat["id"], action, thread_id))
        return True

    async def _set_my_commands(self, params: Json) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list):
            raise ApiError(400, "Bad Request: can't parse commands JSON object")
        for command in commands:
            check_command(command)
        key = (scope_key(params.get("scope")), str(params.get("language_code") or ""))
        self.command_sets[key] = [
            {"command": c["command"], "description": c["description"]} for c in commands
        ]
        return True

    async def _get_my_commands(self, params: Json) -> list[Json]:
        key = (scope_key(params.get("scope")), str(params.get("language_code") or ""))
        return self.command_sets.get(key, [])

    async def _delete_my_commands(self, params: Json) -> bool:
        key = (scope_key(params.get("scope")), str(params.get("language_code") or ""))
        self.command_sets.pop(key, None)
        return True

    async def _get_file(self, params: Json) -> Json:
        stored = self.files.get(str(params.get("file_id") or ""))
        if stored is None:
            raise ApiError(400, "Bad Request: invalid file_id")
        if stored.file_size > MAX_DOWNLOAD_BYTES:
            raise ApiError(400, "Bad Request: file is too big")
        return {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "file_size": stored.file_size,
            "file_path": stored.file_path,
        }

    # -- checks shared by methods -----------------------------------------------------------

    def _target_chat(self, params: Json) -> Json:
        chat_id = params.get("chat_id")
        if chat_id is None or chat_id == "":
            raise ApiError(400, "Bad Request: chat_id is empty")
        chat = self._find_chat(chat_id)
        if chat["id"] in self.blocked_chats:
            raise ApiError(403, BLOCKED_BY_USER if chat["id"] > 0 else KICKED_FROM_GROUP)
        return chat

    def _find_chat(self, chat_id: Any) -> Json:
        if isinstance(chat_id, str) and chat_id.startswith("@"):
            name = chat_id[1:].lower()
            for chat in self.chats.values():
                if str(chat.get("username", "")).lower() == name:
                    return chat
            raise ApiError(400, "Bad Request: chat not found")
        try:
            number = int(chat_id)
        except (TypeError, ValueError):
            raise ApiError(400, "Bad Request: chat not found") from None
        return self.chats.get(number) or synthetic_chat(number)

    def _checked_thread(self, chat: Json, params: Json) -> int | None:
        thread_id = int_param(params, "message_thread_id")
        if thread_id is None:
            return None
        if not chat.get("is_forum"):
            raise ApiError(400, "Bad Request: message thread not found")
        return thread_id

    def _checked_reply(self, chat: Json, params: Json) -> Json | None:
        reply = params.get("reply_parameters")
        if isinstance(reply, dict):
            target_id = reply.get("message_id")
            chat_id = reply.get("chat_id", chat["id"])
            lenient = bool(reply.get("allow_sending_without_reply"))
        else:
            target_id = int_param(params, "reply_to_message_id")
            chat_id = chat["id"]
            lenient = bool(params.get("allow_sending_without_reply"))
        if target_id is None:
            return None
        target = self.messages.get((self._find_chat(chat_id)["id"], int(target_id)))
        if target is None and not lenient:
            raise ApiError(400, "Bad Request: message to be replied not found")
        return target


def scope_key(scope: Any) -> str:
    if not scope:
        return json.dumps({"type": "default"})
    return json.dumps(scope, sort_keys=True)
