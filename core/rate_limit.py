"""Per-chat rate limit: past ``limit`` messages a minute, the rest wait their turn.

A chat's lane (``core.router``) starts at most ``limit`` items in any 60 seconds. Each
message is given its start time when it is accepted, in arrival order: at once while
the chat is under its limit, else one minute after the start of the ``limit``-th
message before it. Nothing is dropped or refused; the chat hears once per burst that
its messages will be answered in order. What was accepted before a restart is not
paced again (it has waited already). The limit counts per session key, so in a group
with a session per member each member has their own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from core.clock import Clock
from core.messages import ChatTarget
from core.outbox import Outbox
from core.store.records import InboxItem

WINDOW_SECONDS = 60.0
MAX_QUIET_CHATS = 10_000
NOTICE = (
    "You're sending messages faster than I can answer ({limit} a minute); "
    "I'll answer the rest in order shortly."
)


@dataclass(slots=True)
class _Chat:
    starts: deque[float] = field(default_factory=deque)  # scheduled starts, ascending
    burst_until: float = 0.0  # the last held message's start; no second notice before


class ChatRateLimiter:
    """See the module docstring. ``limits`` is messages a minute per platform (0 or
    absent: no limit)."""

    def __init__(self, limits: Mapping[str, int], clock: Clock, outbox: Outbox) -> None:
        self._limits = {platform: n for platform, n in limits.items() if n > 0}
        self._clock = clock
        self._outbox = outbox
        self._chats: dict[str, _Chat] = {}
        self._held: dict[int, float] = {}  # inbox id -> when it may start

    def schedule(self, item: InboxItem) -> bool:
        """Give a newly accepted ``item`` its start time, before its lane sees it; True
        when it is the first of a burst to wait (then ``notify`` the chat)."""
        limit = self._limits.get(item.message.platform, 0)
        if not limit:
            return False
        now = self._clock.now()
        chat = self._chat(item.session_key, now)
        start = _next_start(chat.starts, limit, now)
        chat.starts.append(start)
        if start <= now:
            return False
        self._held[item.id] = start
        first_of_burst = chat.burst_until <= now
        chat.burst_until = max(chat.burst_until, start)
        return first_of_burst

    async def notify(self, item: InboxItem) -> None:
        """Tell ``item``'s chat that its messages wait their turn."""
        limit = self._limits.get(item.message.platform, 0)
        await self._outbox.notify(ChatTarget.of(item.message), [NOTICE.format(limit=limit)])

    async def pace(self, inbox_id: int) -> None:
        """Wait until ``inbox_id`` may start (its lane calls this before running it)."""
        start = self._held.pop(inbox_id, None)
        if start is not None:
            await self._clock.sleep_until(start)

    def _chat(self, key: str, now: float) -> _Chat:
        if key not in self._chats and len(self._chats) >= MAX_QUIET_CHATS:
            # Forget chats with nothing in the window, so the map stays bounded.
            quiet = [k for k, c in self._chats.items() if _quiet(c, now)]
            for k in quiet:
                del self._chats[k]
        return self._chats.setdefault(key, _Chat())


def _next_start(starts: deque[float], limit: int, now: float) -> float:
    while starts and starts[0] <= now - WINDOW_SECONDS:
        starts.popleft()
    if len(starts) < limit:
        return now
    return max(now, starts[-limit] + WINDOW_SECONDS)


def _quiet(chat: _Chat, now: float) -> bool:
    return not chat.starts or chat.starts[-1] <= now - WINDOW_SECONDS
