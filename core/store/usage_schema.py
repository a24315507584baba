"""The usage ledger's tables (``core.usage``), on the SessionDB's metadata."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Float, Index, String, Table

from core.store.schema import IdType, metadata

# One row per model call: what it used and cost, and whom it was for (``core.usage``).
usage = Table(
    "usage",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False),
    Column("session_id", String(64)),
    Column("chat_key", String(512)),
    Column("person", String(300)),  # platform:user_id; NULL for background work
    Column("platform", String(32)),
    Column("route", String(255)),
    Column("kind", String(16), nullable=False),  # turn | review | curator | cron | compaction
    Column("provider", String(32), nullable=False),
    Column("model", String(255), nullable=False),
    Column("input_tokens", BigInteger, nullable=False, server_default="0"),
    Column("output_tokens", BigInteger, nullable=False, server_default="0"),
    Column("cache_read_tokens", BigInteger, nullable=False, server_default="0"),
    Column("cache_write_tokens", BigInteger, nullable=False, server_default="0"),
    Column("cost", Float),  # from ``pricing:``; NULL when the model has no price there
    Index("ix_usage_at", "at"),
    Index("ix_usage_chat", "chat_key", "at"),
    Index("ix_usage_person", "person", "at"),
    Index("ix_usage_platform", "platform", "at"),
)

# Owners hear once per budget and period that it ran out, across restarts and replicas.
budget_notices = Table(
    "budget_notices",
    metadata,
    Column("budget", String(600), primary_key=True),
    # The period's first day, ``YYYY-MM-DD`` (daily) or ``YYYY-MM`` (monthly).
    Column("period", String(16), primary_key=True),
    Column("claim", String(32), nullable=False),
    Column("noticed_at", Float, nullable=False),
)
