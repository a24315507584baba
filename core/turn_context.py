"""The turn the running code works for, so that every log line of it can say so.

A turn's id is its inbox row's id: the same from the moment a message is accepted,
through its model calls and tools, to the delivery of its replies, and again when a
restart runs it once more. It lives in a context variable: the adapter's task that
accepted the message, the lane worker that runs its turn and the tasks those start each
carry it, and ``gateway.log_format`` adds it to every record.
"""

from __future__ import annotations

from contextvars import ContextVar

_TURN_ID: ContextVar[str | None] = ContextVar("chatgate_turn_id", default=None)


def bind(inbox_id: int) -> None:
    """From here on (in this task and the tasks it starts), the work is for this turn."""
    _TURN_ID.set(str(inbox_id))


def current() -> str | None:
    """The id of the turn being worked on, or None outside any turn."""
    return _TURN_ID.get()
