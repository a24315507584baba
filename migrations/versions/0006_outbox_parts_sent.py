"""Remember how many parts of a long reply were sent.

A reply longer than one platform message goes out in parts. When a send fails (or
the process stops) between parts, the outbox retries the reply; this column makes
the retry start after the parts already delivered, even after a restart.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "outbox", sa.Column("parts_sent", sa.Integer(), nullable=False, server_default="0")
    )


def downgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("parts_sent")
