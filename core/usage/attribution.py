"""Who a model call is for: session, chat, person, platform and the kind of work.

The code that calls the model sets the attribution for the span of its work
(``attributed``); ``core.usage.meter.MeteredModel`` reads it when it records a call. A
context variable, so a task started inside the span (a streamed call, the background
review started after a turn) carries the span's attribution with it.
"""

from __future__ import annotations

import dataclasses
from contextvars import ContextVar, Token
from typing import Literal

from core.record import record

Kind = Literal["turn", "review", "curator", "cron", "compaction"]
KINDS: tuple[Kind, ...] = ("turn", "review", "curator", "cron", "compaction")
# Work no person asked for: its own budget, never charged to a chat.
BACKGROUND: frozenset[str] = frozenset({"review", "curator", "cron"})


@record
class Attribution:
    """What one model call is charged to (every field may be unknown)."""

    kind: Kind = "turn"
    session_id: str | None = None
    chat_key: str | None = None
    # ``platform:user_id`` (``core.people.person.Person``), None for background work.
    person: str | None = None
    platform: str | None = None
    route: str | None = None

    @property
    def background(self) -> bool:
        return self.kind in BACKGROUND


_NOBODY = Attribution()  # a record (never assigned to): one shared default is safe
_CURRENT: ContextVar[Attribution] = ContextVar("chatgate_usage", default=_NOBODY)


class attributed:  # lower case: read like a function, ``with attributed(kind="cron"):``
    """Within this block, model calls are charged to the current attribution with
    ``changes`` applied (or to ``whole``, when given, whatever was current)."""

    __slots__ = ("_whole", "_changes", "_token")

    def __init__(self, whole: Attribution | None = None, /, **changes: object) -> None:
        self._whole = whole
        self._changes = changes

    def __enter__(self) -> Attribution:
        value = self._whole
        if value is None:
            value = dataclasses.replace(_CURRENT.get(), **self._changes)  # type: ignore[arg-type]
        self._token: Token[Attribution] = _CURRENT.set(value)
        return value

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)


def current() -> Attribution:
    """The attribution of the running code (a turn of no known chat outside any span)."""
    return _CURRENT.get()


def for_message(platform: str, chat_id: str, user_id: str, route: str | None) -> attributed:
    """The span of work on one chat message (``of_message``), with no session yet."""
    return attributed(of_message(platform, chat_id, user_id, route))


def of_message(platform: str, chat_id: str, user_id: str, route: str | None) -> Attribution:
    """A chat turn for this message: the chat is ``platform:chat_id`` (every thread and
    per-person session of it), the person ``platform:user_id``."""
    return Attribution(
        kind="turn",
        chat_key=f"{platform}:{chat_id}",
        person=f"{platform}:{user_id}",
        platform=platform,
        route=route,
    )
