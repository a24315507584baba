"""Prompt-cache token counters on sessions and assistant messages.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels = None
depends_on = None

_COLUMNS = ("cache_read_tokens", "cache_write_tokens")


def upgrade() -> None:
    # server_default fills the counters of sessions that existed before this revision.
    for name in _COLUMNS:
        op.add_column(
            "sessions", sa.Column(name, sa.BigInteger, nullable=False, server_default="0")
        )
        op.add_column("messages", sa.Column(name, sa.Integer))


def downgrade() -> None:
    # batch mode lets SQLite drop columns by copying the table.
    for table in ("messages", "sessions"):
        with op.batch_alter_table(table) as batch:
            for name in _COLUMNS:
                batch.drop_column(name)
