"""The Bot API's media sends, for ``tests.fakes.telegram_server``: ``sendPhoto``,
``sendDocument`` and ``sendVoice`` with an uploaded file (multipart).

Telegram's checks, as far as a test needs them: the file must be an upload, not empty,
at most 50 MB (10 MB for a photo), and a photo must be an image (PNG, JPEG or WebP by
its first bytes; anything else is refused as Telegram refuses an image it cannot
process); a caption at most 1,024 UTF-16 code units with entities inside it; the chat,
topic and reply target are checked as for ``sendMessage``. Each send is recorded as a
``SentFile`` (the bytes, the file name, the caption) and the file is registered, so
``getFile`` serves it back. The message returned carries ``photo`` sizes, a
``document`` or a ``voice``, as Telegram's does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tests.fakes.telegram_buttons import checked_markup
from tests.fakes.telegram_checks import _check_entities
from tests.fakes.telegram_payloads import Json, StoredFile, utf16_len
from tests.fakes.telegram_wire import ApiError, Upload

MAX_UPLOAD_BYTES = 50 * 1000 * 1000
MAX_PHOTO_BYTES = 10 * 1000 * 1000
MAX_CAPTION_UTF16 = 1024
_IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"RIFF")


@dataclass(frozen=True, slots=True)
class SentFile:
    """A file the bot sent: ``method`` is ``sendPhoto``, ``sendDocument`` or ``sendVoice``."""

    method: str
    chat_id: int
    message_id: int
    data: bytes
    file_name: str | None
    mime_type: str | None
    caption: str | None
    caption_entities: list[Json] | None
    message_thread_id: int | None
    reply_to_message_id: int | None
    reply_markup: Json | None
    message: Json  # the Message JSON returned to the bot


class MediaSendsMixin:
    """FakeTelegram's handlers for the media sends above (state set up by FakeTelegram)."""

    sent_files: list[SentFile]
    messages: dict[tuple[int, int], Json]

    if TYPE_CHECKING:  # provided by FakeTelegram, MethodsMixin and MessageBuildersMixin

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

        def register_file(
            self,
            data: bytes,
            *,
            file_path: str | None = None,
            file_id: str | None = None,
            declared_size: int | None = None,
        ) -> StoredFile: ...

        def _target_chat(self, params: Json) -> Json: ...

        def _checked_thread(self, chat: Json, params: Json) -> int | None: ...

        def _checked_reply(self, chat: Json, params: Json) -> Json | None: ...

    async def _send_photo(self, params: Json) -> Json:
        return self._send_media("sendPhoto", "photo", params)

    async def _send_document(self, params: Json) -> Json:
        return self._send_media("sendDocument", "document", params)

    async def _send_voice(self, params: Json) -> Json:
        return self._send_media("sendVoice", "voice", params)

    def _send_media(self, method: str, field: str, params: Json) -> Json:
        chat = self._target_chat(params)
        upload = _checked_upload(params.get(field), field)
        caption, entities = _checked_caption(params)
        thread_id = self._checked_thread(chat, params)
        reply_to = self._checked_reply(chat, params)
        markup = checked_markup(params)
        stored = self.register_file(bytes(upload), file_path=f"{field}s/{upload.filename}")
        extra: Json = {field: _described(field, stored, upload)}
        if caption:
            extra["caption"] = caption
        if entities:
            extra["caption_entities"] = entities
        if thread_id is not None:
            extra.update(message_thread_id=thread_id, is_topic_message=True)
        if reply_to is not None:
            extra["reply_to_message"] = reply_to
        if markup is not None:
            extra["reply_markup"] = markup
        message = self.message(chat, sender=self.bot_user, date=None, **extra)
        self.messages[(chat["id"], message["message_id"])] = message
        self.sent_files.append(
            SentFile(
                method=method,
                chat_id=chat["id"],
                message_id=message["message_id"],
                data=bytes(upload),
                file_name=upload.filename,
                mime_type=upload.content_type,
                caption=caption,
                caption_entities=entities,
                message_thread_id=thread_id,
                reply_to_message_id=None if reply_to is None else reply_to["message_id"],
                reply_markup=markup,
                message=message,
            )
        )
        return message


def _checked_upload(value: Any, field: str) -> Upload:
    if not isinstance(value, Upload):
        # A file id or URL: this fake only takes uploads.
        raise ApiError(400, f"Bad Request: wrong remote file identifier specified: {field}")
    if not value:
        raise ApiError(400, "Bad Request: file must be non-empty")
    if len(value) > MAX_UPLOAD_BYTES:
        raise ApiError(413, "Request Entity Too Large")
    if field == "photo":
        if len(value) > MAX_PHOTO_BYTES:
            raise ApiError(400, "Bad Request: PHOTO_SAVE_FILE_INVALID")
        if not bytes(value).startswith(_IMAGE_MAGIC):
            raise ApiError(400, "Bad Request: IMAGE_PROCESS_FAILED")
    return value


def _checked_caption(params: Json) -> tuple[str | None, list[Json] | None]:
    caption = params.get("caption")
    if caption is None or caption == "":
        return None, None
    if not isinstance(caption, str):
        raise ApiError(400, "Bad Request: can't parse caption")
    if utf16_len(caption) > MAX_CAPTION_UTF16:
        raise ApiError(400, "Bad Request: message caption is too long")
    entities = params.get("caption_entities")
    if entities is not None:
        _check_entities(caption, entities)
    return caption, entities or None


def _described(field: str, stored: StoredFile, upload: Upload) -> Json | list[Json]:
    base = {
        "file_id": stored.file_id,
        "file_unique_id": stored.file_unique_id,
        "file_size": stored.file_size,
    }
    if field == "photo":
        return [{**base, "width": 1280, "height": 960}]
    if field == "voice":
        return {**base, "duration": 1, "mime_type": upload.content_type or "audio/ogg"}
    return {**base, "file_name": upload.filename, "mime_type": upload.content_type}
