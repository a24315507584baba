"""Telling someone who is not allowed to talk to the bot, at most once an hour.

``RefusalLimiter`` (used by ``core.access``) forgets strangers after a while, so a
public bot's memory does not grow without end.
"""

from __future__ import annotations

from collections.abc import Callable

REFUSE_AGAIN_AFTER_SECONDS = 3600.0
MAX_REMEMBERED_REFUSALS = 10_000


class RefusalLimiter:
    """See the module docstring."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._refused_at: dict[str, float] = {}

    def due(self, user_id: str) -> bool:
        """Whether ``user_id`` should be told now (and, if so, remember telling them)."""
        now = self._now()
        last = self._refused_at.get(user_id)
        if last is not None and now - last <= REFUSE_AGAIN_AFTER_SECONDS:
            return False
        if len(self._refused_at) >= MAX_REMEMBERED_REFUSALS:
            cutoff = now - REFUSE_AGAIN_AFTER_SECONDS
            self._refused_at = {u: t for u, t in self._refused_at.items() if t > cutoff}
            if len(self._refused_at) >= MAX_REMEMBERED_REFUSALS:
                self._refused_at.clear()
        self._refused_at[user_id] = now
        return True
