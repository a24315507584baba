"""Telegram Bot API objects as JSON, for ``tests.fakes.telegram_server``.

The fixed world (the default token, bot username, user and group) and builders for what
tests push or compare against: users, chats, entities (offsets in UTF-16 code units, with
``utf16_len``), ``edited`` updates, ``update_kind``, and ``synthetic_chat`` (the chat the
fake assumes for an id it has never seen). ``MessageBuildersMixin`` holds the builders that
need the fake: ``Message`` objects with fresh ids, updates for private, group, topic and
command messages, photos, documents, voice notes and audio backed by registered files.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

Json = dict[str, Any]

DEFAULT_TOKEN = "123456789:AAFakeTokenForChatgateTests_0123456789"
DEFAULT_BOT_USERNAME = "chatgate_test_bot"
DEFAULT_USER: Json = {"id": 5550001, "is_bot": False, "first_name": "Ada", "username": "ada"}
DEFAULT_GROUP_ID = -1001234567890


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A file the test registered; ``getFile`` describes it, the file route serves it."""

    file_id: str
    file_unique_id: str
    file_path: str
    data: bytes
    file_size: int


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, Telegram's unit for lengths and entity offsets."""
    return len(text.encode("utf-16-le")) // 2


def make_user(
    user_id: int = DEFAULT_USER["id"],
    *,
    first_name: str = "Ada",
    username: str | None = "ada",
    is_bot: bool = False,
) -> Json:
    """A ``User`` object."""
    user: Json = {"id": user_id, "is_bot": is_bot, "first_name": first_name}
    if username is not None:
        user["username"] = username
    return user


def private_chat(user: Json) -> Json:
    """The private ``Chat`` between the bot and ``user``."""
    chat: Json = {"id": user["id"], "type": "private", "first_name": user["first_name"]}
    if "username" in user:
        chat["username"] = user["username"]
    return chat


def group_chat(
    chat_id: int = DEFAULT_GROUP_ID,
    *,
    title: str = "Test group",
    supergroup: bool = True,
    is_forum: bool = False,
) -> Json:
    """A group or supergroup ``Chat``; ``is_forum`` makes it a supergroup with topics."""
    chat: Json = {"id": chat_id, "type": "supergroup" if supergroup else "group", "title": title}
    if is_forum:
        chat["type"] = "supergroup"
        chat["is_forum"] = True
    return chat


def entity(kind: str, offset: int, length: int, **extra: Any) -> Json:
    """A ``MessageEntity``; offsets and lengths are in UTF-16 code units."""
    return {"type": kind, "offset": offset, "length": length, **extra}


def entity_for(text: str, part: str, kind: str, **extra: Any) -> Json:
    """An entity covering the first occurrence of ``part`` in ``text``."""
    start = text.index(part)
    return entity(kind, utf16_len(text[:start]), utf16_len(part), **extra)


def edited(update: Json, *, edit_date: int | None = None) -> Json:
    """The same message delivered as an ``edited_message`` update (a new update id)."""
    message = copy.deepcopy(update["message"])
    message["edit_date"] = edit_date if edit_date is not None else message["date"] + 1
    return {"edited_message": message}


def _timestamp(date: int | datetime | None) -> int:
    if date is None:
        return int(time.time())
    if isinstance(date, datetime):
        return int(date.timestamp())
    return date


def update_kind(update: Json) -> str:
    """The update's type: the one key other than ``update_id``."""
    return next(key for key in update if key != "update_id")


def synthetic_chat(chat_id: int) -> Json:
    if chat_id > 0:
        return {"id": chat_id, "type": "private", "first_name": "User"}
    kind = "supergroup" if str(chat_id).startswith("-100") else "group"
    return {"id": chat_id, "type": kind, "title": "Chat"}


def _photo_size(stored: StoredFile, width: int, height: int) -> Json:
    return {
        "file_id": stored.file_id,
        "file_unique_id": stored.file_unique_id,
        "width": width,
        "height": height,
        "file_size": stored.file_size,
    }


class MessageBuildersMixin:
    """FakeTelegram's builders of messages, updates and files.

    The state below is set up by ``FakeTelegram.__init__``.
    """

    bot_username: str
    chats: dict[int, Json]
    messages: dict[tuple[int, int], Json]
    files: dict[str, StoredFile]
    _message_ids: itertools.count[int]
    _file_ids: itertools.count[int]

    if TYPE_CHECKING:  # provided by FakeTelegram

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
    ) -> Json:
        """A ``Message`` object (not an update) in ``chat`` from ``sender``."""
        message: Json = {
            "message_id": message_id if message_id is not None else next(self._message_ids),
            "from": sender if sender is not None else DEFAULT_USER,
            "chat": chat,
            "date": _timestamp(date),
        }
        if text is not None:
            message["text"] = text
        if entities:
            message["entities"] = entities
        message.update(extra)
        return message

    def bot_message(self, chat: Json, text: str = "earlier bot answer") -> Json:
        """A message the bot sent earlier in ``chat`` (a target for replies)."""
        message = self.message(chat, text, sender=self.bot_user)
        self.chats.setdefault(chat["id"], chat)
        self.messages[(chat["id"], message["message_id"])] = message
        return message

    def private_message(
        self, text: str, *, user: Json | None = None, date: int | datetime | None = None
    ) -> Json:
        """An update: ``user`` (default ``DEFAULT_USER``) writes ``text`` to the bot."""
        sender = user or DEFAULT_USER
        return {"message": self.message(private_chat(sender), text, sender=sender, date=date)}

    def group_message(
        self,
        text: str,
        *,
        user: Json | None = None,
        chat: Json | None = None,
        mention: bool = False,
        reply_to: Json | None = None,
        reply_to_bot: bool = False,
        date: int | datetime | None = None,
        **extra: Any,
    ) -> Json:
        """An update: a message in a group (default: a supergroup, ``DEFAULT_GROUP_ID``).

        ``mention`` prefixes ``@botname`` with a mention entity; ``reply_to`` makes it a
        reply to that message, ``reply_to_bot`` a reply to an earlier bot message.
        """
        chat = chat or group_chat()
        entities: list[Json] = []
        if mention:
            handle = f"@{self.bot_username}"
            text = f"{handle} {text}"
            entities.append(entity("mention", 0, utf16_len(handle)))
        if reply_to_bot:
            reply_to = self.bot_message(chat)
        if reply_to is not None:
            extra["reply_to_message"] = reply_to
        message = self.message(
            chat, text, sender=user, entities=entities or None, date=date, **extra
        )
        return {"message": message}

    def topic_message(
        self,
        text: str,
        *,
        thread_id: int = 77,
        user: Json | None = None,
        chat: Json | None = None,
        mention: bool = False,
        date: int | datetime | None = None,
    ) -> Json:
        """An update: a message in forum topic ``thread_id`` of a forum supergroup."""
        chat = chat or group_chat(is_forum=True)
        return self.group_message(
            text,
            user=user,
            chat=chat,
            mention=mention,
            date=date,
            message_thread_id=thread_id,
            is_topic_message=True,
        )

    def group_reply_with_thread(
        self,
        text: str,
        *,
        user: Json | None = None,
        chat: Json | None = None,
        mention: bool = False,
        reply_to_bot: bool = True,
    ) -> Json:
        """An update: a reply in an ordinary (non-forum) supergroup that nonetheless
        carries a ``message_thread_id`` (the id of the replied-to thread), without
        ``is_topic_message``. Adapters must not treat it as a topic.
        """
        chat = chat or group_chat()
        update = self.group_message(
            text, user=user, chat=chat, mention=mention, reply_to_bot=reply_to_bot
        )
        message = update["message"]
        root = message.get("reply_to_message", {}).get("message_id", message["message_id"])
        message["message_thread_id"] = root
        return update

    def command_message(
        self,
        command: str,
        args: str = "",
        *,
        chat: Json | None = None,
        user: Json | None = None,
        addressed: bool = True,
        date: int | datetime | None = None,
    ) -> Json:
        """An update: ``/command@botname args`` (``addressed=False`` drops ``@botname``).

        Sent to a private chat with ``user`` unless ``chat`` is given.
        """
        sender = user or DEFAULT_USER
        word = f"/{command.lstrip('/')}" + (f"@{self.bot_username}" if addressed else "")
        text = f"{word} {args}" if args else word
        entities = [entity("bot_command", 0, utf16_len(word))]
        target = chat or private_chat(sender)
        message = self.message(target, text, sender=sender, entities=entities, date=date)
        return {"message": message}

    def photo_message(
        self,
        data: bytes = b"\x89PNG fake photo bytes",
        *,
        caption: str | None = None,
        chat: Json | None = None,
        user: Json | None = None,
        date: int | datetime | None = None,
    ) -> Json:
        """An update: a photo (two sizes, both registered files) with an optional caption.

        The largest size (last, as in Telegram) serves ``data``; the thumbnail serves a
        prefix of it.
        """
        sender = user or DEFAULT_USER
        thumb = self.register_file(data[: max(1, len(data) // 4)], file_path="photos/thumb.jpg")
        full = self.register_file(data, file_path="photos/full.jpg")
        sizes = [
            _photo_size(thumb, 90, 90),
            _photo_size(full, 1280, 960),
        ]
        extra: Json = {"photo": sizes}
        if caption is not None:
            extra["caption"] = caption
        target = chat or private_chat(sender)
        return {"message": self.message(target, sender=sender, date=date, **extra)}

    def document_message(
        self,
        data: bytes = b"fake document contents\n",
        *,
        file_name: str = "notes.txt",
        mime_type: str = "text/plain",
        caption: str | None = None,
        declared_size: int | None = None,
        chat: Json | None = None,
        user: Json | None = None,
        date: int | datetime | None = None,
    ) -> Json:
        """An update: a document (a registered file) with an optional caption.

        ``declared_size`` makes Telegram report a size other than ``len(data)`` (to test a
        size cap without allocating the bytes).
        """
        sender = user or DEFAULT_USER
        stored = self.register_file(
            data, file_path=f"documents/{file_name}", declared_size=declared_size
        )
        document = {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "file_name": file_name,
            "mime_type": mime_type,
            "file_size": stored.file_size,
        }
        extra: Json = {"document": document}
        if caption is not None:
            extra["caption"] = caption
        target = chat or private_chat(sender)
        return {"message": self.message(target, sender=sender, date=date, **extra)}

    def voice_message(
        self,
        data: bytes = b"OggS fake voice note",
        *,
        duration: int = 3,
        caption: str | None = None,
        chat: Json | None = None,
        user: Json | None = None,
    ) -> Json:
        """An update: a voice note (Opus in Ogg, served as Telegram does: ``voice/*.oga``)."""
        stored = self.register_file(data, file_path="voice/file.oga")
        voice = {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "duration": duration,
            "mime_type": "audio/ogg",
            "file_size": stored.file_size,
        }
        return self._media_update({"voice": voice}, caption, chat, user)

    def audio_message(
        self,
        data: bytes = b"ID3 fake audio file",
        *,
        file_name: str = "talk.mp3",
        mime_type: str = "audio/mpeg",
        caption: str | None = None,
        chat: Json | None = None,
        user: Json | None = None,
    ) -> Json:
        """An update: an audio file (music, a recording) sent as audio."""
        stored = self.register_file(data, file_path=f"music/{file_name}")
        audio = {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "duration": 60,
            "file_name": file_name,
            "mime_type": mime_type,
            "file_size": stored.file_size,
        }
        return self._media_update({"audio": audio}, caption, chat, user)

    def _media_update(
        self, extra: Json, caption: str | None, chat: Json | None, user: Json | None
    ) -> Json:
        sender = user or DEFAULT_USER
        if caption is not None:
            extra["caption"] = caption
        return {"message": self.message(chat or private_chat(sender), sender=sender, **extra)}

    def register_file(
        self,
        data: bytes,
        *,
        file_path: str | None = None,
        file_id: str | None = None,
        declared_size: int | None = None,
    ) -> StoredFile:
        """Store bytes the fake will describe with ``getFile`` and serve for download."""
        number = next(self._file_ids)
        file_id = file_id or f"FAKEFILE{number:04d}"
        digest = hashlib.sha256(data).hexdigest()[:12]
        path = file_path or f"files/file_{number}"
        stem, dot, suffix = path.rpartition(".")
        unique_path = f"{stem}_{number}.{suffix}" if dot else f"{path}_{number}"
        stored = StoredFile(
            file_id=file_id,
            file_unique_id=f"U{digest}",
            file_path=unique_path,
            data=data,
            file_size=declared_size if declared_size is not None else len(data),
        )
        self.files[file_id] = stored
        return stored
