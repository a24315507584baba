"""Reply text stored once: ``outbox.message_id``; ``ix_audit_event`` dropped.

A model's answer was written twice, as the assistant message and again as the reply's
``outbox.text``. A reply that quotes an assistant message of its own turn now keeps
``text`` NULL and points at that message (``message_id``, no foreign key: forgetting
and retention delete messages); readers take ``COALESCE(outbox.text,
messages.content)``. Replies that quote no message (commands, notices, approval
prompts) keep their text. Rows written before this revision keep theirs too: nothing is
rewritten on the way up. The way down copies each referenced message's content back
into ``text`` (an empty text where the message is gone) before ``text`` is NOT NULL
again.

``ix_audit_event`` (event, at) cost about a fifth of the audit's bytes per session for
``audit list --event``, an owner's occasional query that a scan (or ``ix_audit_at``
with ``--since``) answers well enough.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

_RESTORE_TEXT = (
    "UPDATE outbox SET text = COALESCE("
    "(SELECT m.content FROM messages m WHERE m.id = outbox.message_id), '') "
    "WHERE text IS NULL"
)


@contextmanager
def _rebuilding_outbox() -> Iterator[None]:
    """Around a SQLite rebuild of ``outbox`` (a column's NOT NULL changes only so).

    The rebuild drops the old table, and with foreign keys on (the SessionDB's
    connections always have them, and the PRAGMA cannot change inside the migration's
    transaction) that fails while ``outbox_files`` rows point at it. They wait in a
    temporary table meanwhile and come back with the same ids, which the rebuilt table
    keeps. PostgreSQL alters the column in place."""
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        yield
        return
    bind.exec_driver_sql("CREATE TEMP TABLE outbox_files_parked AS SELECT * FROM outbox_files")
    bind.exec_driver_sql("DELETE FROM outbox_files")
    yield
    bind.exec_driver_sql("INSERT INTO outbox_files SELECT * FROM outbox_files_parked")
    bind.exec_driver_sql("DROP TABLE outbox_files_parked")


def upgrade() -> None:
    with _rebuilding_outbox(), op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("message_id", _id))
        batch.alter_column("text", existing_type=sa.Text, nullable=True)
    op.drop_index("ix_audit_event", table_name="audit")


def downgrade() -> None:
    op.create_index("ix_audit_event", "audit", ["event", "at"])
    op.execute(_RESTORE_TEXT)
    with _rebuilding_outbox(), op.batch_alter_table("outbox") as batch:
        batch.alter_column("text", existing_type=sa.Text, nullable=False)
        batch.drop_column("message_id")
