"""Pairing: the people owners let in, the codes waiting for them, wrong codes given.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "paired_people",
        sa.Column("platform", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(255), primary_key=True),
        sa.Column("user_name", sa.String(255)),
        sa.Column("approved_at", sa.Float, nullable=False),
        sa.Column("approved_by", sa.String(255), nullable=False),
    )
    op.create_table(
        "pairing_requests",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("platform", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("user_name", sa.String(255)),
        sa.Column("chat_id", sa.String(255), nullable=False),
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
    )
    op.create_index("ix_pairing_requests_code", "pairing_requests", ["platform", "code_hash"])
    op.create_index("ix_pairing_requests_user", "pairing_requests", ["platform", "user_id"])
    op.create_table(
        "pairing_failures",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("platform", sa.String(32), nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_index("ix_pairing_failures_platform", "pairing_failures", ["platform", "at"])


def downgrade() -> None:
    op.drop_index("ix_pairing_failures_platform", table_name="pairing_failures")
    op.drop_table("pairing_failures")
    op.drop_index("ix_pairing_requests_user", table_name="pairing_requests")
    op.drop_index("ix_pairing_requests_code", table_name="pairing_requests")
    op.drop_table("pairing_requests")
    op.drop_table("paired_people")
