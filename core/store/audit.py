"""The audit ledger's rows (``core.audit``): appended in batches, read, summed, pruned.

Rows are metadata only (``core.audit.events`` decides what goes in ``detail``); this
module stores and reads them and never looks inside ``detail`` but to return it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from core.store.audit_schema import audit
from core.store.tx import Tx, insert_sql
from core.store.writer import Writer

_COLUMNS = (
    "at",
    "event",
    "turn_id",
    "session_id",
    "chat_key",
    "person",
    "platform",
    "message_id",
    "detail",
)
_INSERT = insert_sql("audit", _COLUMNS)


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One audit event; ``id`` is 0 until it is stored."""

    at: float
    event: str
    turn_id: int | None = None
    session_id: str | None = None
    chat_key: str | None = None
    person: str | None = None
    platform: str | None = None
    message_id: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    id: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at,
            "event": self.event,
            "turn_id": self.turn_id,
            "session_id": self.session_id,
            "chat_key": self.chat_key,
            "person": self.person,
            "platform": self.platform,
            "message_id": self.message_id,
            "detail": self.detail,
        }


def _params(r: AuditRecord) -> dict[str, Any]:
    # Spelled out, and orjson: about ten of these a turn, on the writer's thread.
    detail = orjson.dumps(r.detail, option=orjson.OPT_SORT_KEYS).decode() if r.detail else None
    return {
        "at": r.at,
        "event": r.event,
        "turn_id": r.turn_id,
        "session_id": r.session_id,
        "chat_key": r.chat_key,
        "person": r.person,
        "platform": r.platform,
        "message_id": r.message_id,
        "detail": detail,
    }


def _record(row: Any) -> AuditRecord:
    values = dict(row._mapping)
    detail = values.pop("detail")
    if isinstance(detail, str):  # SQLite hands JSON text back as written by the writer
        detail = json.loads(detail)
    return AuditRecord(**values, detail=detail or {})


class AuditStore:
    """Every read and write of the ``audit`` table; ``SessionDB.audit``."""

    def __init__(self, read: AsyncEngine, writer: Writer) -> None:
        self._read = read
        self._writer = writer

    async def append(self, records: Sequence[AuditRecord]) -> None:
        """Add ``records`` in one write (the audit writer's batch)."""
        # The rows are built on the writer's thread, off the event loop that runs turns.
        await self._writer.run(lambda tx: tx.executemany(_INSERT, [_params(r) for r in records]))

    async def rows(
        self,
        *,
        since: float | None = None,
        event: str | None = None,
        person: str | None = None,
        after_id: int = 0,
        limit: int | None = 100,
        newest_first: bool = False,
    ) -> list[AuditRecord]:
        """Events matching every filter given; oldest first unless ``newest_first``."""
        stmt = _filtered(select(audit), since, event).where(audit.c.id > after_id)
        if person is not None:
            stmt = stmt.where(audit.c.person == person)
        stmt = stmt.order_by(audit.c.id.desc() if newest_first else audit.c.id)
        if limit is not None:
            stmt = stmt.limit(limit)
        async with self._read.connect() as conn:
            return [_record(r) for r in await conn.execute(stmt)]

    async def summary(self, *, since: float | None = None) -> dict[str, int]:
        """How many events of each kind (``event`` name to count)."""
        stmt = _filtered(select(audit.c.event, func.count()), since, None).group_by(audit.c.event)
        async with self._read.connect() as conn:
            return {str(r[0]): int(r[1]) for r in await conn.execute(stmt)}

    async def prune(self, before: float) -> int:
        """Delete events older than ``before``; how many went."""
        return int(await self._writer.run(lambda tx: _prune(tx, before)))


def _filtered(stmt: Select[Any], since: float | None, event: str | None) -> Select[Any]:
    if since is not None:
        stmt = stmt.where(audit.c.at >= since)
    if event is not None:
        stmt = stmt.where(audit.c.event == event)
    return stmt


def _prune(tx: Tx, before: float) -> int:
    gone = int(tx.scalar("SELECT count(*) FROM audit WHERE at < :before", {"before": before}))
    tx.execute("DELETE FROM audit WHERE at < :before", {"before": before})
    return gone
