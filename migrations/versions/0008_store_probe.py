"""The store health probe's row: written to learn whether the store writes again.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "store_probe",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("probed_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("store_probe")
