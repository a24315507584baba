"""Session keys: which long-lived session a chat message belongs to."""

from __future__ import annotations

from core.messages import InboundMessage


def session_key(msg: InboundMessage, *, group_sessions_per_user: bool) -> str:
    """``platform:chat_id[:thread_id]``, plus ``:user_id`` in groups when configured.

    Colons inside ids are escaped so two different chats can never share a key.
    """
    parts = [msg.platform, _escape(msg.chat_id)]
    if msg.thread_id:
        parts.append(_escape(msg.thread_id))
    if msg.is_group and group_sessions_per_user and not msg.thread_id:
        parts.append("u=" + _escape(msg.user_id))
    return ":".join(parts)


def _escape(value: str) -> str:
    return value.replace("%", "%25").replace(":", "%3A").replace("\x00", "%00")
