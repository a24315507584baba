"""Prompts stored once: ``prompts`` by content hash; sessions point at theirs.

Every session row held its whole system prompt and tool list, the same bytes in
thousands of rows but for the session's own id. Each distinct prompt (with the id cut
out, ``core.store.prompts``) and each distinct tool list is copied into ``prompts``
once, the sessions get ``prompt_hash``, ``prompt_id_at`` and ``tools_hash``, and the
old columns go. Pasting the id back gives each session's prompt byte for byte, so what
the model is sent does not change. A blank prompt (a session ended by a forgetting)
becomes a NULL ``prompt_hash``.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06
"""

from __future__ import annotations

import hashlib
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels = None
depends_on = None

_BATCH = 500
# As ``core.store.prompts`` (a migration keeps its own copy: later code may change).
_HASH_CHARS = 32


def _hash(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]


def upgrade() -> None:
    op.create_table(
        "prompts",
        sa.Column("hash", sa.String(32), primary_key=True),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    # Plain ADD/DROP COLUMN, not ``batch_alter_table``: a rebuild of ``sessions`` would
    # copy every prompt once more, and plain statements touch no other table.
    op.add_column("sessions", sa.Column("prompt_hash", sa.String(32)))
    op.add_column("sessions", sa.Column("prompt_id_at", sa.Integer))
    op.add_column("sessions", sa.Column("tools_hash", sa.String(32)))
    _copy_prompts(op.get_bind())
    op.drop_column("sessions", "system_prompt")
    op.drop_column("sessions", "tool_specs")


def _copy_prompts(conn: sa.Connection) -> None:
    read = sa.text(
        "SELECT id, started_at, system_prompt, tool_specs FROM sessions "
        "WHERE id > :after ORDER BY id LIMIT :n"
    )
    put = sa.text(
        "INSERT INTO prompts (hash, body, created_at) VALUES (:hash, :body, :at) "
        "ON CONFLICT DO NOTHING"
    )
    point = sa.text(
        "UPDATE sessions SET prompt_hash = :prompt_hash, prompt_id_at = :prompt_id_at, "
        "tools_hash = :tools_hash WHERE id = :id"
    )
    after = ""
    while rows := conn.execute(read, {"after": after, "n": _BATCH}).all():
        bodies: dict[str, dict[str, Any]] = {}
        points = [_point(row, bodies) for row in rows]
        if bodies:
            conn.execute(put, list(bodies.values()))
        conn.execute(point, points)
        after = rows[-1].id


def _point(row: Any, bodies: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The session's new columns; its prompt and tool list added to ``bodies``."""
    prompt, cut_at = row.system_prompt or "", None
    at = prompt.find(row.id)
    if at >= 0:
        prompt, cut_at = prompt[:at] + prompt[at + len(row.id) :], at
    prompt_hash = tools_hash = None
    if row.system_prompt:
        prompt_hash = _hash(prompt)
        bodies.setdefault(prompt_hash, {"hash": prompt_hash, "body": prompt, "at": row.started_at})
    if row.tool_specs is not None:
        tools_hash = _hash(row.tool_specs)
        bodies.setdefault(
            tools_hash, {"hash": tools_hash, "body": row.tool_specs, "at": row.started_at}
        )
    return {
        "id": row.id,
        "prompt_hash": prompt_hash,
        "prompt_id_at": cut_at if prompt_hash else None,
        "tools_hash": tools_hash,
    }


def downgrade() -> None:
    op.add_column(
        "sessions", sa.Column("system_prompt", sa.Text, nullable=False, server_default="")
    )
    op.add_column("sessions", sa.Column("tool_specs", sa.Text))
    conn = op.get_bind()
    conn.execute(
        sa.text(
            "UPDATE sessions SET "
            "system_prompt = COALESCE((SELECT body FROM prompts WHERE hash = prompt_hash), ''), "
            "tool_specs = (SELECT body FROM prompts WHERE hash = tools_hash)"
        )
    )
    # Paste each session's id back where it was cut out.
    cut = conn.execute(
        sa.text(
            "SELECT id, system_prompt, prompt_id_at FROM sessions WHERE prompt_id_at IS NOT NULL"
        )
    ).all()
    for row in cut:
        body, at = row.system_prompt, row.prompt_id_at
        whole = body[:at] + row.id + body[at:]
        conn.execute(
            sa.text("UPDATE sessions SET system_prompt = :p WHERE id = :id"),
            {"p": whole, "id": row.id},
        )
    op.drop_column("sessions", "tools_hash")
    op.drop_column("sessions", "prompt_id_at")
    op.drop_column("sessions", "prompt_hash")
    op.drop_table("prompts")
