"""Plain values read from and written to the SessionDB."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from core.media.refs import MediaRef
from core.messages import ChatTarget, InboundMessage, OutboundMessage
from core.record import record

InboxStatus = Literal["pending", "done", "failed", "cancelled"]
ApprovalStatus = Literal["pending", "approved", "denied", "expired"]
ApprovalScope = Literal["once", "session"]


@record
class SessionRow:
    """One session: a stretch of a chat's conversation with one stored system prompt."""

    id: str
    session_key: str
    platform: str
    chat_id: str
    started_at: float
    last_active_at: float
    provider: str
    model: str
    system_prompt: str
    thread_id: str | None = None
    user_id: str | None = None
    route: str | None = None
    parent_session_id: str | None = None
    ended_at: float | None = None
    end_reason: str | None = None
    prompt_tiers: dict[str, int] | None = None
    # The offered tools' specs as JSON (``core.session_tools``), frozen like the prompt.
    tool_specs: str | None = None
    message_count: int = 0
    turn_count: int = 0
    tool_call_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@record
class StoredMessage:
    """A transcript message as the model saw it."""

    id: int
    role: str
    content: str | None
    api_content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    # Files that came with it: a user message's images, a tool result's files to send.
    media: tuple[MediaRef, ...] = ()
    # Who wrote a user message (``messages.user_id``); None for other roles.
    user_id: str | None = None


@record
class NewMessage:
    """A transcript message to write."""

    role: str
    content: str | None
    created_at: float
    api_content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    platform_message_id: str | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    # As ``StoredMessage.media``.
    media: tuple[MediaRef, ...] = ()
    # As ``StoredMessage.user_id``: set on a person's user message, so forgetting them
    # finds their words in a session they shared with others.
    user_id: str | None = None


@record
class LastSeen:
    """The newest message accepted from one chat (and thread) of a platform."""

    chat_id: str
    thread_id: str | None
    platform_message_id: str
    received_at: float


@record
class InboxItem:
    """An accepted inbound message waiting for (or done with) its turn."""

    id: int
    session_key: str
    message: InboundMessage
    status: InboxStatus = "pending"
    session_id: str | None = None
    # How many processes started its turn before this one (``core.crash_guard``).
    attempts: int = 0
    # The platform message a streamed preview of its reply was shown in, if one was
    # (``core.streaming``): a turn run again after a crash takes it over.
    preview_id: str | None = None


@record
class Approval:
    """A tool call that waits for (or got) a person's decision (``core.approvals``).

    ``turn_messages`` is the paused turn's work so far, the asking call's assistant
    message last but its tool results: what the turn resumes from.
    """

    id: int
    inbox_id: int
    session_id: str
    session_key: str
    target: ChatTarget
    tool_call_id: str
    tool_name: str
    arguments: str
    status: ApprovalStatus
    created_at: float
    turn_messages: tuple[NewMessage, ...] = ()
    scope: ApprovalScope | None = None
    decided_by: str | None = None
    decided_at: float | None = None
    prompt_outbox_id: int | None = None


@record
class TurnReplies:
    """What processing one inbox item produced: its session and its queued replies."""

    session_id: str | None
    replies: list[OutboundMessage]
    # True when the item is still waiting for its turn (its replies are not known yet).
    pending: bool = False
    # The turn paused for these approvals: ``replies`` are those so far (the prompt).
    approvals: tuple[Approval, ...] = ()


@record
class Accepted:
    """The result of offering a message to the inbox; ``created`` is False for a redelivery."""

    item: InboxItem
    created: bool


@dataclass(slots=True)
class TurnOutcome:
    """Everything one turn writes, committed in one transaction.

    A failed or cancelled turn carries no transcript messages: the DB never holds
    half a turn, and the inbox row keeps the user's text.
    """

    item: InboxItem
    status: InboxStatus
    processed_at: float
    session_id: str | None = None
    messages: list[NewMessage] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    error: str | None = None
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    end_session_reason: str | None = None
    # The streamed preview the last reply takes over (``OutboundMessage.preview_id``).
    preview_id: str | None = None
    # Files sent with the last reply (``OutboundMessage.files``).
    files: list[MediaRef] = field(default_factory=list)
