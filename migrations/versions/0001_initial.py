"""Sessions, messages, inbox and outbox.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    _create_sessions()
    _create_messages()
    _create_inbox()
    _create_outbox()


def _create_sessions() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("session_key", sa.String(512), nullable=False),
        sa.Column("platform", sa.String(32), nullable=False),
        sa.Column("chat_id", sa.String(255), nullable=False),
        sa.Column("thread_id", sa.String(255)),
        sa.Column("user_id", sa.String(255)),
        sa.Column("route", sa.String(255)),
        sa.Column("parent_session_id", sa.String(64), sa.ForeignKey("sessions.id")),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("ended_at", sa.Float),
        sa.Column("end_reason", sa.String(32)),
        sa.Column("last_active_at", sa.Float, nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("model", sa.String(255), nullable=False),
        sa.Column("system_prompt", sa.Text, nullable=False),
        sa.Column("prompt_tiers", sa.JSON),
        sa.Column("title", sa.String(255)),
        sa.Column("message_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("turn_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("tool_call_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("input_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("output_tokens", sa.BigInteger, nullable=False, server_default="0"),
    )
    op.create_index(
        "ux_sessions_active_key",
        "sessions",
        ["session_key"],
        unique=True,
        sqlite_where=sa.text("ended_at IS NULL"),
        postgresql_where=sa.text("ended_at IS NULL"),
    )
    op.create_index("ix_sessions_key_started", "sessions", ["session_key", "started_at"])
    op.create_index("ix_sessions_parent", "sessions", ["parent_session_id"])


def _create_messages() -> None:
    op.create_table(
        "messages",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(64), sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text),
        sa.Column("api_content", sa.Text),
        sa.Column("tool_calls", sa.JSON),
        sa.Column("tool_call_id", sa.String(255)),
        sa.Column("tool_name", sa.String(255)),
        sa.Column("platform_message_id", sa.String(255)),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("finish_reason", sa.String(32)),
        sa.Column("input_tokens", sa.Integer),
        sa.Column("output_tokens", sa.Integer),
    )
    op.create_index("ix_messages_session_id", "messages", ["session_id", "id"])


def _create_inbox() -> None:
    op.create_table(
        "inbox",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("platform", sa.String(32), nullable=False),
        sa.Column("dedup_key", sa.String(512), nullable=False),
        sa.Column("platform_message_id", sa.String(255), nullable=False),
        sa.Column("route", sa.String(255)),
        sa.Column("chat_id", sa.String(255), nullable=False),
        sa.Column("thread_id", sa.String(255)),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("user_name", sa.String(255)),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("payload", sa.JSON),
        sa.Column("session_key", sa.String(512), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("received_at", sa.Float, nullable=False),
        sa.Column("processed_at", sa.Float),
        sa.Column("session_id", sa.String(64)),
        sa.Column("error", sa.Text),
        sa.UniqueConstraint("platform", "dedup_key", name="ux_inbox_dedup"),
    )
    op.create_index("ix_inbox_status", "inbox", ["status", "id"])


def _create_outbox() -> None:
    op.create_table(
        "outbox",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("inbox_id", _id, sa.ForeignKey("inbox.id")),
        sa.Column("session_id", sa.String(64)),
        sa.Column("platform", sa.String(32), nullable=False),
        sa.Column("route", sa.String(255)),
        sa.Column("chat_id", sa.String(255), nullable=False),
        sa.Column("thread_id", sa.String(255)),
        sa.Column("reply_to", sa.String(255)),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("delivered_at", sa.Float),
        sa.Column("platform_message_id", sa.String(255)),
        sa.Column("error", sa.Text),
    )
    op.create_index("ix_outbox_chat", "outbox", ["platform", "chat_id", "id"])
    op.create_index("ix_outbox_inbox", "outbox", ["inbox_id"])
    op.create_index("ix_outbox_status", "outbox", ["status", "id"])


def downgrade() -> None:
    for table in ("outbox", "inbox", "messages", "sessions"):
        op.drop_table(table)
