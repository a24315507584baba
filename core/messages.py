"""What crosses the boundary between adapters and the core.

An adapter turns a platform event into an ``InboundMessage`` and hands it to the
inbox; the core answers with ``OutboundMessage`` values that the adapter owning the
chat delivers. Neither side sees the other's library types.
"""

from __future__ import annotations

from dataclasses import field
from typing import Literal

from core.media.refs import MediaRef
from core.record import record

# What a platform says a file is: a photo, a voice note (recorded in the chat), an audio
# file, a video, a document; ``file`` when it does not say (the mime type decides).
AttachmentKind = Literal["image", "voice", "audio", "video", "document", "file"]


@record
class Attachment:
    """A file that came with a message, already downloaded to ``path``."""

    path: str
    mime_type: str = "application/octet-stream"
    name: str = ""
    size: int = 0
    kind: AttachmentKind = "file"


@record
class InboundMessage:
    """One message from a person, normalized by its adapter.

    ``dedup_key`` is unique per platform: a redelivery of the same platform message
    carries the same key and yields no second turn. ``route`` names the webhook
    route (or other adapter-specific channel) the message came through.
    """

    platform: str
    chat_id: str
    user_id: str
    text: str
    platform_message_id: str
    dedup_key: str
    received_at: float
    thread_id: str | None = None
    user_name: str | None = None
    route: str | None = None
    reply_to: str | None = None
    addressed: bool = True
    is_group: bool = False
    attachments: tuple[Attachment, ...] = field(default=())
    # The platform's own allow-list admits the sender or the chat (ids, usernames, roles
    # or channels: what only the adapter can tell); see ``core.access``.
    allow_listed: bool = False
    # Read back from the platform's history after a gap rather than delivered live: a
    # stranger's such message is dropped without a pairing offer or a refusal.
    replayed: bool = False


@record
class ReplyAction:
    """A button under a reply. Tapping it sends ``command`` (a chat command such as
    ``/approve 12 session``) into the chat as the person who tapped, so a tap passes the
    same access policy and command handling as the typed command would."""

    label: str
    command: str


@record
class OutboundFile:
    """A file sent with a reply (``send_file``, a spoken reply): ``id`` names it in the
    outbox (the webhook serves it at ``/webhook/{route}/files/{id}``), ``media`` is its
    stored copy (``core.media.store.MediaStore.path``)."""

    id: str
    media: MediaRef

    @property
    def name(self) -> str:
        return self.media.name or self.id

    @property
    def mime(self) -> str:
        return self.media.mime


@record
class OutboundMessage:
    """One reply for a chat, as stored in the outbox (``id`` is its outbox id)."""

    id: int
    platform: str
    chat_id: str
    text: str
    session_id: str | None = None
    thread_id: str | None = None
    reply_to: str | None = None
    inbox_id: int | None = None
    created_at: float = 0.0
    # Parts of this reply already delivered (a long reply goes out in several).
    parts_sent: int = 0
    # Buttons under the reply (an approval's choices); a platform without buttons shows
    # the reply's text alone, which names the typed commands.
    actions: tuple[ReplyAction, ...] = ()
    # Files sent after the text (a ``voice`` one before it, the text as its caption).
    files: tuple[OutboundFile, ...] = ()
    # The platform message that showed this reply while it was generated (a streamed
    # preview, ``core.streaming``): the reply's first part replaces its text rather than
    # being sent anew, so the reply appears once.
    preview_id: str | None = None


@record
class ChatTarget:
    """Where an unprompted message goes: a chat (and thread) on one platform.

    ``route`` matters for the webhook adapter, whose chats live under a route.
    """

    platform: str
    chat_id: str
    thread_id: str | None = None
    route: str | None = None

    @classmethod
    def of(cls, msg: InboundMessage) -> ChatTarget:
        return cls(msg.platform, msg.chat_id, msg.thread_id, msg.route)
