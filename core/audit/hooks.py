"""The audit's turn hooks: whom a turn concerns once its session is known, and each
memory write (its file and action, never the entry's text)."""

from __future__ import annotations

from core.audit.events import AuditSink, Who
from core.hooks import TurnHooks, TurnStart
from core.memory.writes import MemoryWrite
from core.store.records import InboxItem


def add_audit_hooks(hooks: TurnHooks, audit: AuditSink) -> None:
    """Add to ``hooks`` what the audit ledger follows."""

    async def session_known(start: TurnStart, item: InboxItem) -> None:
        audit.remember(item.id, Who.of(item, start.state.row.id))

    async def memory_written(write: MemoryWrite) -> None:
        detail = {"target": write.target, "action": write.action, "session": write.session_id}
        audit.record("memory_write", detail)

    hooks.before_turn.insert(0, session_known)  # before compaction may replace the session
    hooks.memory_written.append(memory_written)
