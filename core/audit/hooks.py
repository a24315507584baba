"""The audit's turn hooks: whom a turn concerns once its session is known, and each
memory write (its file and action, never the entry's text)."""

from __future__ import annotations

from core.audit.events import AuditSink, Who
from core.hooks import TurnStart
from core.memory.writes import MemoryWrite
from core.record import record
from core.store.records import InboxItem


@record
class AuditHooks:
    """``before_turn`` and ``memory_written`` hooks recording into ``audit``.
    ``session_known`` belongs after compaction's hook, which may replace the session."""

    audit: AuditSink

    async def session_known(self, start: TurnStart, item: InboxItem) -> None:
        self.audit.remember(item.id, Who.of(item, start.state.row.id))

    async def memory_written(self, write: MemoryWrite) -> None:
        detail = {"target": write.target, "action": write.action, "session": write.session_id}
        self.audit.record("memory_write", detail)
