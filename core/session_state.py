"""One open session as a turn sees it: its row and its transcript as the model saw it."""

from __future__ import annotations

from dataclasses import dataclass, field

from core import compaction
from core.models.base import ChatMessage
from core.models.wire import WireCache
from core.store.records import SessionRow

# Python's share of each message beside its text: the ChatMessage, its strings' headers,
# the list slot (measured with ``sys.getsizeof`` on typical messages, rounded up).
MESSAGE_OVERHEAD_BYTES = 200
ROW_OVERHEAD_BYTES = 600


@dataclass(slots=True)
class SessionState:
    """A session row and its transcript as the model saw it (the next request's prefix)."""

    row: SessionRow
    history: list[ChatMessage]
    # Characters of ``history[:counted]``, kept as the history grows (it only appends).
    counted: int = 0
    chars: int = 0
    # Each message's request bytes, per provider dialect (``core.models.wire``).
    wire: WireCache = field(default_factory=WireCache)

    def history_chars(self) -> int:
        if self.counted > len(self.history):  # replaced, not appended: count afresh
            self.counted, self.chars = 0, 0
        self.chars += compaction.message_chars(self.history[self.counted :])
        self.counted = len(self.history)
        return self.chars

    def weigh(self) -> int:
        """Estimated bytes this state holds in memory (``core.session_cache``): its
        prompt, tool list and transcript, and any serialised request form kept beside it."""
        row = self.row
        weight = ROW_OVERHEAD_BYTES + len(row.system_prompt) + len(row.tool_specs or "")
        weight += self.history_chars() + MESSAGE_OVERHEAD_BYTES * len(self.history)
        # The request bytes kept per message count as much as the transcript itself.
        return weight + self.wire.nbytes
