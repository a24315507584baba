"""The turn the running code works for, so that every log line of it can say so.

A turn's id is its inbox row's id: the same from the moment a message is accepted,
through its model calls and tools, to the delivery of its replies, and again when a
restart runs it once more. It lives in a context variable, set for the span of each
piece of work (``scope``) in the task doing it: the adapter's task while it accepts the
message, the lane worker while it runs the turn (and the tasks it starts meanwhile), the
delivery of each reply; ``gateway.log_format`` adds it to every record. Outside a scope a
task's lines carry no turn id rather than a stale one.
"""

from __future__ import annotations

from contextvars import ContextVar

_TURN_ID: ContextVar[str | None] = ContextVar("chatgate_turn_id", default=None)


class scope:  # lower case: read like a function, ``with scope(item.id):``
    """Within this block (and the tasks started in it), the work is for this turn
    (None: for no turn). A class, not ``@contextmanager``: it runs several times a turn."""

    __slots__ = ("_token", "_value")

    def __init__(self, inbox_id: int | None) -> None:
        self._value = None if inbox_id is None else str(inbox_id)

    def __enter__(self) -> None:
        self._token = _TURN_ID.set(self._value)

    def __exit__(self, *exc: object) -> None:
        _TURN_ID.reset(self._token)


def current() -> str | None:
    """The id of the turn being worked on, or None outside any turn."""
    return _TURN_ID.get()
