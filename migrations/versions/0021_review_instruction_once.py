"""A background review's instruction stored once: ``reviews.instruction_hash``.

Every review's transcript opened with the same instruction for its kinds (about 1.2 KB,
longer than the rest of a typical review), stored again in each row's JSON. A finished
review now keeps that first message's text in ``prompts`` (content-addressed, shared by
every review that sent the same words) and its hash on the row; the transcript JSON
keeps the message without its ``content``. Rows written before this revision keep their
whole JSON: nothing is rewritten on the way up. The way down puts each instruction back
into its transcript.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-06
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("reviews", sa.Column("instruction_hash", sa.String(32)))


def downgrade() -> None:
    bind = op.get_bind()
    rows = bind.execute(
        sa.text(
            "SELECT r.id, r.transcript, p.body FROM reviews r "
            "JOIN prompts p ON p.hash = r.instruction_hash WHERE r.transcript IS NOT NULL"
        )
    ).all()
    for review_id, raw, body in rows:
        messages = json.loads(raw) if isinstance(raw, str) else raw
        if messages:
            messages[0] = {"role": "user", "content": body, **messages[0]}
        bind.execute(
            sa.text("UPDATE reviews SET transcript = :t WHERE id = :id"),
            {"t": json.dumps(messages, ensure_ascii=False), "id": review_id},
        )
    with op.batch_alter_table("reviews") as batch:
        batch.drop_column("instruction_hash")
    # Instructions only reviews pointed at go: at 0020 no prune would ever see them.
    bind.execute(
        sa.text(
            "DELETE FROM prompts WHERE hash NOT IN ("
            "SELECT prompt_hash FROM sessions WHERE prompt_hash IS NOT NULL UNION "
            "SELECT tools_hash FROM sessions WHERE tools_hash IS NOT NULL)"
        )
    )
