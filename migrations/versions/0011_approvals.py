"""Approvals: tool calls waiting for a person's decision, session grants, reply buttons.

Revision ID: 0011
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("actions", sa.JSON))
    op.create_table(
        "approvals",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("inbox_id", _id, sa.ForeignKey("inbox.id"), nullable=False),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("session_key", sa.String(512), nullable=False),
        sa.Column("platform", sa.String(32), nullable=False),
        sa.Column("route", sa.String(255)),
        sa.Column("chat_id", sa.String(255), nullable=False),
        sa.Column("thread_id", sa.String(255)),
        sa.Column("tool_call_id", sa.String(255), nullable=False),
        sa.Column("tool_name", sa.String(255), nullable=False),
        sa.Column("arguments", sa.Text, nullable=False),
        sa.Column("turn_messages", sa.JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("scope", sa.String(16)),
        sa.Column("decided_by", sa.String(255)),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("decided_at", sa.Float),
        sa.Column("prompt_outbox_id", _id),
    )
    op.create_index("ix_approvals_inbox", "approvals", ["inbox_id", "id"])
    op.create_index("ix_approvals_chat", "approvals", ["platform", "chat_id", "status", "id"])
    op.create_index("ix_approvals_status", "approvals", ["status", "id"])
    op.create_table(
        "approval_grants",
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column("tool_name", sa.String(255), primary_key=True),
        sa.Column("granted_by", sa.String(255), nullable=False),
        sa.Column("granted_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("approval_grants")
    op.drop_index("ix_approvals_status", table_name="approvals")
    op.drop_index("ix_approvals_chat", table_name="approvals")
    op.drop_index("ix_approvals_inbox", table_name="approvals")
    op.drop_table("approvals")
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("actions")
