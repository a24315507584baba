"""The audit ledger's table (``core.audit``), on the SessionDB's metadata."""

from __future__ import annotations

from sqlalchemy import JSON, Column, Float, Index, String, Table

from core.store.schema import IdType, metadata

# The audit ledger (``core.audit``): append-only metadata of what the gateway did, never
# a message's text or a tool's arguments. ``person`` and ``chat_key`` of a forgotten
# person hold a salted hash instead (``chatgate people forget``). No index on ``event``:
# ``audit list --event`` scans (migration 0019 dropped it to save bytes per session).
audit = Table(
    "audit",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False),
    Column("event", String(64), nullable=False),
    Column("turn_id", IdType),
    Column("session_id", String(64)),
    Column("chat_key", String(512)),
    Column("person", String(300)),
    Column("platform", String(32)),
    Column("message_id", String(255)),
    Column("detail", JSON),
    Index("ix_audit_at", "at"),
    Index("ix_audit_person", "person", "id"),
)
