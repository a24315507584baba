"""Index the inbox by platform and arrival time.

A push adapter that reconnects (Discord) asks which of its chats were active lately
and the newest message seen in each, to fetch what it missed from the platform's
history. Without this index that question scans every message ever received.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_inbox_platform_received", "inbox", ["platform", "received_at"])


def downgrade() -> None:
    op.drop_index("ix_inbox_platform_received", table_name="inbox")
