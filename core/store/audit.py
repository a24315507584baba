"""The audit ledger's rows (``core.audit``): appended in batches, read, summed, pruned.

Rows are metadata only (``core.audit.events`` decides what goes in ``detail``); this
module stores and reads them and never looks inside ``detail`` but to return it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from core.store.audit_schema import audit, audit_who
from core.store.tx import Tx, greedy_chunks, insert_sql
from core.store.writer import Writer

_INSERT = insert_sql("audit", ("at", "event", "turn_id", "who_id", "message_id", "detail"))
_WHO_PARTS = ("platform", "chat_key", "person", "session_id")
_FIND_WHO = f"SELECT id, digest, {', '.join(_WHO_PARTS)} FROM audit_who WHERE digest IN"
# Digests looked up at once (``greedy_chunks``): one statement finds up to 64 rows.
_LOOKUPS = (64, 8, 1)
_ADD_WHO = insert_sql("audit_who", ("digest", *_WHO_PARTS), " RETURNING id")
# Who rows no event points at any more (after a prune): one ``ix_audit_who`` probe each.
_PRUNE_WHO = (
    "DELETE FROM audit_who WHERE NOT EXISTS (SELECT 1 FROM audit WHERE audit.who_id = audit_who.id)"
)

WhoKey = tuple[str | None, str | None, str | None, str | None]
_NOBODY: WhoKey = (None, None, None, None)  # an event about no one has no row


def who_digest(key: WhoKey) -> int:
    """What finds the ``audit_who`` row of (platform, chat key, person, session id): 64
    bits of SHA-256 as a signed integer (8 bytes in the row and its index, where hex
    text took 33). Two keys that share one are told apart by ``who_id``."""
    joined = "\x1f".join("\x00" if part is None else part for part in key)
    digest = hashlib.sha256(joined.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def who_id(tx: Tx, key: WhoKey) -> int | None:
    """The ``audit_who`` row of ``key``, added when there is none; None for nobody."""
    return who_ids(tx, [key])[key]


def who_ids(tx: Tx, keys: Sequence[WhoKey]) -> dict[WhoKey, int | None]:
    """The ``audit_who`` row of each of ``keys``, added where there is none.

    The rows are looked up in the database every time (a batch's keys in one or a few
    statements): a ``people forget`` in another process rewrites rows under the running
    gateway, and a cached id would file the next events under the pseudonym."""
    ids: dict[WhoKey, int | None] = {_NOBODY: None}
    digests = {key: who_digest(key) for key in dict.fromkeys(keys) if key != _NOBODY}
    found: dict[int, dict[str, Any]] = {}
    for chunk in greedy_chunks(list(set(digests.values())), _LOOKUPS):
        marks = ", ".join(f":d{i}" for i in range(len(chunk)))
        args = {f"d{i}": digest for i, digest in enumerate(chunk)}
        found.update((row["digest"], row) for row in tx.fetch(f"{_FIND_WHO} ({marks})", args))
    taken = set(found)  # digests a row has: a newcomer with one of them goes without
    for key, digest in digests.items():
        row = found.get(digest)
        if row is not None and tuple(row[part] for part in _WHO_PARTS) == key:
            ids[key] = int(row["id"])
        else:  # two keys, one digest: the newcomer gets a row of its own that nothing finds
            ids[key] = _add_who(tx, key, None if digest in taken else digest)
            taken.add(digest)
    return ids


def _add_who(tx: Tx, key: WhoKey, digest: int | None) -> int:
    return int(tx.scalar(_ADD_WHO, {"digest": digest, **dict(zip(_WHO_PARTS, key, strict=True))}))


@dataclass(slots=True)  # not frozen: about six a turn, made on the event loop
class AuditRecord:
    """One audit event; ``id`` is 0 until it is stored. Never changed once made.
    ``AuditWriter.record`` builds it positionally: keep the fields in this order."""

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


def _append(tx: Tx, records: Sequence[AuditRecord]) -> None:
    ids = who_ids(tx, [(r.platform, r.chat_key, r.person, r.session_id) for r in records])
    rows = []
    for r in records:
        key = (r.platform, r.chat_key, r.person, r.session_id)
        # Spelled out, and orjson: about ten of these a turn, on the writer's thread.
        detail = orjson.dumps(r.detail, option=orjson.OPT_SORT_KEYS).decode() if r.detail else None
        rows.append(
            {
                "at": r.at,
                "event": r.event,
                "turn_id": r.turn_id,
                "who_id": ids[key],
                "message_id": r.message_id,
                "detail": detail,
            }
        )
    tx.executemany(_INSERT, rows)


# An event with whom it concerns, as ``AuditRecord`` has it.
LEDGER = select(
    audit.c.id,
    audit.c.at,
    audit.c.event,
    audit.c.turn_id,
    audit_who.c.session_id,
    audit_who.c.chat_key,
    audit_who.c.person,
    audit_who.c.platform,
    audit.c.message_id,
    audit.c.detail,
).select_from(audit.outerjoin(audit_who, audit_who.c.id == audit.c.who_id))


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
        await self._writer.run(lambda tx: _append(tx, records))

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
        stmt = _filtered(LEDGER, since, event).where(audit.c.id > after_id)
        if person is not None:
            stmt = stmt.where(audit_who.c.person == person)
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
    if gone:
        tx.execute(_PRUNE_WHO, {})
    return gone
