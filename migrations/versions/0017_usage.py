"""Usage accounting and budget notices: ``usage`` (one row per model call) and
``budget_notices`` (owners told once per budget and period).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "usage",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("session_id", sa.String(64)),
        sa.Column("chat_key", sa.String(512)),
        sa.Column("person", sa.String(300)),
        sa.Column("platform", sa.String(32)),
        sa.Column("route", sa.String(255)),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("model", sa.String(255), nullable=False),
        sa.Column("input_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("output_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("cache_read_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("cache_write_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("cost", sa.Float),
    )
    op.create_index("ix_usage_at", "usage", ["at"])
    op.create_index("ix_usage_chat", "usage", ["chat_key", "at"])
    op.create_index("ix_usage_person", "usage", ["person", "at"])
    op.create_index("ix_usage_platform", "usage", ["platform", "at"])
    op.create_table(
        "budget_notices",
        sa.Column("budget", sa.String(600), primary_key=True),
        sa.Column("period", sa.String(16), primary_key=True),
        sa.Column("claim", sa.String(32), nullable=False),
        sa.Column("noticed_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("budget_notices")
    op.drop_index("ix_usage_platform", table_name="usage")
    op.drop_index("ix_usage_person", table_name="usage")
    op.drop_index("ix_usage_chat", table_name="usage")
    op.drop_index("ix_usage_at", table_name="usage")
    op.drop_table("usage")
