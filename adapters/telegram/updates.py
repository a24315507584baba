"""Which Telegram updates reach the agent, and as what.

A pure decision over python-telegram-bot's ``Update``: the adapter downloads files and
talks to the inbox; this module only says whether an update is a message for the
agent, ignored (and why), too old, or from someone not allowed.

- Private chats are direct sessions. Groups and supergroups are group chats (the core
  gives each member their own session unless ``sessions.group_sessions_per_user`` is
  off). A forum topic is its own thread, keyed by ``message_thread_id``; the
  ``message_thread_id`` Telegram also puts on a plain reply in an ordinary group is
  not a thread and is ignored, so replies do not split a group's session.
- In groups the bot answers when mentioned (``@name`` or a text mention), replied to,
  or sent ``/command@name``; ``require_mention: false`` answers every message but
  ``/command@otherbot``, which is another bot's.
- Captions count as text; photos, documents, voice notes and audio files are listed
  for download (photos and image documents as images, for a vision model; voice notes
  and audio files marked so, to be transcribed).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import field
from datetime import datetime

from telegram import Message, MessageEntity, Update, User

from core.media.images import is_image_mime
from core.messages import AttachmentKind
from core.record import record


@record
class BotIdentity:
    id: int
    username: str


@record
class Access:
    """Who may talk to the bot: user ids or @usernames, chat ids, or everyone."""

    users: frozenset[str] = frozenset()
    chats: frozenset[str] = frozenset()
    everyone: bool = False

    @classmethod
    def of(cls, users: Collection[str], chats: Collection[str], everyone: bool) -> Access:
        names = frozenset(u.strip().lstrip("@").lower() for u in users if u.strip())
        return cls(names, frozenset(c.strip() for c in chats if c.strip()), everyone)

    def allows(self, message: Message) -> bool:
        return self.admits(message.from_user, message.chat.id)

    def admits(self, user: User | None, chat_id: int) -> bool:
        """Whether ``user`` writing (or tapping a button) in chat ``chat_id`` is let in."""
        if self.everyone:
            return True
        if str(chat_id) in self.chats:
            return True
        if user is None:
            return False
        username = (user.username or "").lower()
        return str(user.id) in self.users or (bool(username) and username in self.users)


@record
class FileRef:
    """A file to download before the message goes to the inbox."""

    file_id: str
    name: str
    mime_type: str
    size: int | None
    kind: AttachmentKind = "file"


@record
class Incoming:
    """An update that is a message for the agent."""

    message: Message
    chat_id: str
    user_id: str
    user_name: str | None
    text: str
    thread_id: str | None
    is_group: bool
    reply_to: str | None
    sent_at: float
    # The allow-list (``telegram.allowed_users`` / ``allowed_chats``) admits it.
    allowed: bool
    files: list[FileRef] = field(default_factory=list)


@record
class Ignored:
    reason: str


@record
class TooOld:
    """Waited longer than ``max_backlog_age`` (the gateway was down): skipped."""

    incoming: Incoming


Decision = Incoming | Ignored | TooOld


def decide(
    update: Update,
    bot: BotIdentity,
    access: Access,
    *,
    now: float,
    max_backlog_age: float,
    require_mention: bool = True,
    handle_edits: bool = False,
) -> Decision:
    """What to do with one update; see the module docstring."""
    message = update.message
    if message is None and handle_edits:
        message = update.edited_message
    if message is None:
        return Ignored("not a message" if update.edited_message is None else "an edit")
    user = message.from_user
    if user is None or user.is_bot:
        return Ignored("not from a person")
    thread = _thread(message)
    group = message.chat.type in ("group", "supergroup")
    if group and require_mention and not _addressed(message, bot):
        return Ignored("a group message not addressed to the bot")
    if group and _for_another_bot(message, bot):
        return Ignored("a command for another bot")
    sent_at = _timestamp(message.edit_date or message.date)
    text = _text(message, bot)
    files = _files(message)
    if not text and not files:
        return Ignored("no text or file")
    reply = message.reply_to_message
    incoming = Incoming(
        message=message,
        chat_id=str(message.chat.id),
        user_id=str(user.id),
        user_name=user.username or user.full_name or None,
        text=text,
        thread_id=str(thread) if thread is not None else None,
        is_group=group,
        reply_to=str(reply.message_id) if reply is not None else None,
        sent_at=sent_at,
        allowed=access.allows(message),
        files=files,
    )
    return TooOld(incoming) if now - sent_at > max_backlog_age else incoming


def _thread(message: Message) -> int | None:
    """The forum topic, if any; a reply's thread id in an ordinary group is no thread."""
    if message.is_topic_message and message.message_thread_id is not None:
        return message.message_thread_id
    return None


def _addressed(message: Message, bot: BotIdentity) -> bool:
    reply = message.reply_to_message
    if reply is not None and reply.from_user is not None and reply.from_user.id == bot.id:
        return True
    name = "@" + bot.username.lower()
    for entity, text in _entities(message).items():
        if entity.type == MessageEntity.MENTION and text.lower() == name:
            return True
        if entity.type == MessageEntity.TEXT_MENTION and entity.user and entity.user.id == bot.id:
            return True
        if entity.type == MessageEntity.BOT_COMMAND and text.lower().endswith(name):
            return True
    return False


def _for_another_bot(message: Message, bot: BotIdentity) -> bool:
    """``/cmd@otherbot``: in a group with several bots, another bot's business."""
    words = (message.text if message.text is not None else message.caption or "").split()
    if not words or not words[0].startswith("/") or "@" not in words[0]:
        return False
    return words[0].rsplit("@", 1)[1].lower() != bot.username.lower()


def _entities(message: Message) -> dict[MessageEntity, str]:
    if message.text is not None:
        return message.parse_entities()
    if message.caption is not None:
        return message.parse_caption_entities()
    return {}


def _text(message: Message, bot: BotIdentity) -> str:
    """The words for the agent: text or caption, ``/cmd@thisbot`` read as ``/cmd``."""
    text = message.text if message.text is not None else message.caption or ""
    suffix = "@" + bot.username
    first, _, rest = text.partition(" ")
    if first.startswith("/") and first.lower().endswith(suffix.lower()):
        text = first[: -len(suffix)] + (" " + rest if rest else "")
    return text.strip()


def _files(message: Message) -> list[FileRef]:
    files = []
    if message.photo:
        largest = max(message.photo, key=lambda p: (p.width * p.height, p.file_size or 0))
        name = f"photo-{largest.file_unique_id}.jpg"
        files.append(FileRef(largest.file_id, name, "image/jpeg", largest.file_size, "image"))
    document = message.document
    if document is not None:
        name = document.file_name or f"document-{document.file_unique_id}"
        mime = document.mime_type or "application/octet-stream"
        # An image sent as a file (uncompressed) is still shown to a vision model.
        kind: AttachmentKind = "image" if is_image_mime(mime) else "document"
        files.append(FileRef(document.file_id, name, mime, document.file_size, kind))
    return files + _sounds(message)


def _sounds(message: Message) -> list[FileRef]:
    """A voice note (Telegram records Opus in Ogg) and an audio file, to be transcribed."""
    files = []
    voice = message.voice
    if voice is not None:
        name = f"voice-{voice.file_unique_id}.ogg"
        mime = voice.mime_type or "audio/ogg"
        files.append(FileRef(voice.file_id, name, mime, voice.file_size, "voice"))
    audio = message.audio
    if audio is not None:
        name = audio.file_name or f"audio-{audio.file_unique_id}"
        mime = audio.mime_type or "audio/mpeg"
        files.append(FileRef(audio.file_id, name, mime, audio.file_size, "audio"))
    return files


def _timestamp(when: datetime | None) -> float:
    return when.timestamp() if when is not None else 0.0
