"""Media and streamed previews: files on messages and replies, preview message ids.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("media", sa.JSON))
    with op.batch_alter_table("inbox") as batch:
        batch.add_column(sa.Column("preview_id", sa.String(255)))
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("preview_id", sa.String(255)))
        batch.add_column(sa.Column("file_count", sa.Integer, nullable=False, server_default="0"))
    op.create_table(
        "outbox_files",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("outbox_id", _id, sa.ForeignKey("outbox.id"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("mime", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("caption", sa.Text),
    )
    op.create_index("ix_outbox_files_outbox", "outbox_files", ["outbox_id", "position"])


def downgrade() -> None:
    op.drop_index("ix_outbox_files_outbox", table_name="outbox_files")
    op.drop_table("outbox_files")
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("file_count")
        batch.drop_column("preview_id")
    with op.batch_alter_table("inbox") as batch:
        batch.drop_column("preview_id")
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("media")
