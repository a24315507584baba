"""The audit ledger: ``audit``, append-only metadata of what the gateway did.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "audit",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("turn_id", _id),
        sa.Column("session_id", sa.String(64)),
        sa.Column("chat_key", sa.String(512)),
        sa.Column("person", sa.String(300)),
        sa.Column("platform", sa.String(32)),
        sa.Column("message_id", sa.String(255)),
        sa.Column("detail", sa.JSON),
    )
    op.create_index("ix_audit_at", "audit", ["at"])
    op.create_index("ix_audit_person", "audit", ["person", "id"])
    op.create_index("ix_audit_event", "audit", ["event", "at"])


def downgrade() -> None:
    op.drop_index("ix_audit_event", table_name="audit")
    op.drop_index("ix_audit_person", table_name="audit")
    op.drop_index("ix_audit_at", table_name="audit")
    op.drop_table("audit")
