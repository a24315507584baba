"""The audit ledger's tables (``core.audit``), on the SessionDB's metadata."""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, Column, Float, Index, String, Table

from core.store.schema import IdType, metadata

# Whom audit events concern, stored once (migration 0020): a turn's half dozen events
# and every later turn of the same session point at one row instead of each carrying
# the four strings. ``digest`` (``core.store.audit.who_digest``) finds the row for a
# platform, chat key, person and session; a forgotten person's rows hold salted hashes
# and no digest (``chatgate people forget``), so nothing new is ever filed under them.
# No index on ``person``: ``people show`` and ``forget`` scan this table, which holds a
# couple of rows a session, not the events.
audit_who = Table(
    "audit_who",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("digest", BigInteger, unique=True),
    Column("platform", String(32)),
    Column("chat_key", String(512)),
    Column("person", String(300)),
    Column("session_id", String(64)),
)

# The audit ledger (``core.audit``): append-only metadata of what the gateway did, never
# a message's text or a tool's arguments. No index on ``event``: ``audit list --event``
# scans (migration 0019 dropped it to save bytes per session).
audit = Table(
    "audit",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False),
    Column("event", String(64), nullable=False),
    Column("turn_id", IdType),
    Column("who_id", IdType),  # audit_who.id; NULL: the event concerns no one
    Column("message_id", String(255)),
    Column("detail", JSON),
    Index("ix_audit_at", "at"),
    Index("ix_audit_who", "who_id", "id"),
)
