"""Streamed previews on the fake Telegram: ``sendMessageDraft`` and ``deleteMessage``.

``sendMessageDraft`` (Bot API 10.0) is for private chats only, needs a non-zero
``draft_id`` and takes an empty text (a "Thinking…" placeholder) or 1-4096 UTF-16 units
with valid entities (``telegram_checks``). ``deleteMessage`` deletes one message the bot
sent (a bot may always delete its own). Both are recorded with the fake's receive time
(``time.monotonic()``), so a test can check pacing against what Telegram saw.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tests.fakes.telegram_checks import checked_text
from tests.fakes.telegram_payloads import Json
from tests.fakes.telegram_wire import ApiError, int_param


@dataclass(frozen=True, slots=True)
class Draft:
    """A successful ``sendMessageDraft``."""

    chat_id: int
    draft_id: int
    text: str
    entities: list[Json] | None
    message_thread_id: int | None
    at: float = field(default_factory=time.monotonic)  # when the fake received it


@dataclass(frozen=True, slots=True)
class Deletion:
    """A successful ``deleteMessage``."""

    chat_id: int
    message_id: int
    at: float = field(default_factory=time.monotonic)


class DraftsMixin:
    """FakeTelegram's handlers for drafts and deletions; state set up by its ``__init__``."""

    bot_id: int
    drafts: list[Draft]
    deletions: list[Deletion]
    messages: dict[tuple[int, int], Json]

    if TYPE_CHECKING:  # provided by MethodsMixin

        def _target_chat(self, params: Json) -> Json: ...

    def drafts_to(self, chat_id: int) -> list[Draft]:
        """Drafts shown in one chat, in order."""
        return [draft for draft in self.drafts if draft.chat_id == chat_id]

    async def _send_message_draft(self, params: Json) -> bool:
        chat = self._target_chat(params)
        if chat.get("type") != "private":
            raise ApiError(400, "Bad Request: message drafts can be sent only to private chats")
        draft_id = int_param(params, "draft_id")
        if not draft_id:
            raise ApiError(400, "Bad Request: draft_id must be non-zero")
        text, entities = "", None
        if params.get("text"):
            text, entities, _ = checked_text(params)
        thread = int_param(params, "message_thread_id")
        self.drafts.append(Draft(chat["id"], draft_id, text, entities, thread))
        return True

    async def _delete_message(self, params: Json) -> bool:
        chat = self._target_chat(params)
        key = (chat["id"], int_param(params, "message_id") or 0)
        message = self.messages.get(key)
        if message is None or message.get("from", {}).get("id") != self.bot_id:
            raise ApiError(400, "Bad Request: message to delete not found")
        del self.messages[key]
        self.deletions.append(Deletion(*key))
        return True
