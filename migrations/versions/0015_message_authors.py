"""Who wrote each user message: ``messages.user_id``, for forgetting one person.

A shared session (a group chat without per-user sessions) holds several people's
messages; ``chatgate people forget`` removes one person's turns from it, so each user
message records its author from now on. Rows written before this revision are filled
from the inbox where it still holds the message (same session and platform message id);
the rest stay NULL (compaction summaries, scheduled prompts, messages whose inbox row
is gone).

Revision ID: 0015
Revises: 0012
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0012"
branch_labels = None
depends_on = None

# Not ``batch_alter_table``: a nullable column is a plain ALTER on SQLite, and a table
# rebuild would drop the full-text triggers of 0003. An UPDATE of ``user_id`` alone
# fires none of them (they watch ``content`` and ``tool_name``).
_BACKFILL = (
    "UPDATE messages SET user_id = (SELECT i.user_id FROM inbox i "
    "WHERE i.session_id = messages.session_id "
    "AND i.platform_message_id = messages.platform_message_id "
    "ORDER BY i.id LIMIT 1) "
    "WHERE role = 'user' AND platform_message_id IS NOT NULL AND user_id IS NULL"
)


def upgrade() -> None:
    op.add_column("messages", sa.Column("user_id", sa.String(255)))
    op.execute(_BACKFILL)
    op.create_index("ix_messages_user", "messages", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_messages_user", table_name="messages")
    # A plain DROP COLUMN (SQLite 3.35+) for the same reason: no table rebuild.
    op.drop_column("messages", "user_id")
