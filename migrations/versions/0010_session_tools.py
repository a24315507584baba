"""Session tools: the tool specs a session offers, frozen when it opens (like its prompt).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # NULL for a session opened before this revision: it freezes its list at its next turn.
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("tool_specs", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("tool_specs")
