"""Captions of files sent with replies (``send_file``'s ``caption``).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outbox_files") as batch:
        batch.add_column(sa.Column("caption", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("outbox_files") as batch:
        batch.drop_column("caption")
