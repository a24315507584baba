"""Who may see which session: the privacy rule every `session_search` mode applies.

The gateway serves many people, so a search never crosses into another person's chat:

- ``chat``: sessions of the caller's chat on the same platform. When the caller is in a
  thread, only sessions of that thread; outside a thread, every session of the chat.
- ``user``: ``chat`` plus the caller's own direct sessions on the same platform: a
  direct session is one whose ``user_id`` is the caller's and whose ``chat_id`` equals
  that ``user_id`` (how adapters key one-to-one chats), not a per-user session inside a
  group. User ids are not linked across platforms, so an equal id elsewhere may be
  another person and is never searched. ``core.store.search.matches`` applies the same
  rule.
- ``all``: every session; only with ``search.allow_global`` (a single-owner deployment)
  or for the people listed in ``search.owners``.
"""

from __future__ import annotations

from typing import Literal

from sqlalchemy import ColumnElement, and_, or_, true

from core.record import record
from core.store.schema import sessions

ScopeMode = Literal["chat", "user", "all"]
SCOPE_MODES: tuple[ScopeMode, ...] = ("chat", "user", "all")


@record
class Reach:
    """The caller's chat and the scope mode they asked for."""

    platform: str
    chat_id: str
    thread_id: str | None
    user_id: str
    mode: ScopeMode = "chat"


def visible(reach: Reach) -> ColumnElement[bool]:
    """A ``WHERE`` clause over ``sessions`` selecting exactly the sessions ``reach`` may see."""
    if reach.mode == "all":
        return true()
    same_chat = and_(sessions.c.platform == reach.platform, sessions.c.chat_id == reach.chat_id)
    if reach.thread_id is not None:
        same_chat = and_(same_chat, sessions.c.thread_id == reach.thread_id)
    if reach.mode == "chat":
        return same_chat
    own_direct = and_(
        sessions.c.platform == reach.platform,
        sessions.c.user_id == reach.user_id,
        sessions.c.chat_id == sessions.c.user_id,
        sessions.c.session_key.not_like("%:u=%"),
    )
    return or_(same_chat, own_direct)
