"""Whom audit events concern, stored once: ``audit_who``; ``audit.who_id``.

Every audit row carried its platform, chat key, person and session id: about half the
ledger's bytes, written six to ten times a turn (plus ``ix_audit_person``, the largest
of its indexes). They now live once in ``audit_who``, found by ``digest`` (64 bits of
SHA-256 over the four as a signed integer, ``core.store.audit.who_digest``), and each
event keeps the row's id. Forgetting a person rewrites their few ``audit_who`` rows
instead of every event of theirs. Existing rows are converted on the way up; the way
down copies the four columns back.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06
"""

from __future__ import annotations

import hashlib
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_PARTS = ("platform", "chat_key", "person", "session_id")


def _digest(key: tuple[Any, ...]) -> int:
    # The same as ``core.store.audit.who_digest`` at this revision; written out here
    # so that the migration never changes with the code.
    joined = "\x1f".join("\x00" if part is None else str(part) for part in key)
    digest = hashlib.sha256(joined.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _is_pseudonymised(key: tuple[Any, ...]) -> bool:
    """A forgotten person's rows (their person is a 64-hex pseudonym, not platform:id)
    get no digest, so nothing new is ever filed under them."""
    person = key[2]
    return person is not None and ":" not in str(person)


def upgrade() -> None:
    op.create_table(
        "audit_who",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("digest", sa.BigInteger, unique=True),
        sa.Column("platform", sa.String(32)),
        sa.Column("chat_key", sa.String(512)),
        sa.Column("person", sa.String(300)),
        sa.Column("session_id", sa.String(64)),
    )
    op.add_column("audit", sa.Column("who_id", _id))
    bind = op.get_bind()
    # Set-based, so that a ledger of millions of events converts in one pass: the
    # distinct "who"s first, their digests in Python (a few per session), then every
    # event joined to its row.
    columns = ", ".join(_PARTS)
    anyone = " OR ".join(f"{part} IS NOT NULL" for part in _PARTS)
    bind.execute(
        sa.text(
            f"INSERT INTO audit_who ({columns}) SELECT DISTINCT {columns} FROM audit WHERE {anyone}"
        )
    )
    whos = bind.execute(sa.text(f"SELECT id, {columns} FROM audit_who")).all()
    digests = [
        {"row_id": row[0], "digest": None if _is_pseudonymised(row[1:]) else _digest(row[1:])}
        for row in whos
    ]
    if digests:
        bind.execute(sa.text("UPDATE audit_who SET digest = :digest WHERE id = :row_id"), digests)
    if bind.dialect.name == "sqlite":
        # ``IS`` matches NULL to NULL and is answered from an index on SQLite.
        bind.execute(sa.text(f"CREATE INDEX tmp_audit_who_parts ON audit_who ({columns})"))
        same = " AND ".join(f"w.{part} IS audit.{part}" for part in _PARTS)
        bind.execute(
            sa.text(
                f"UPDATE audit SET who_id = (SELECT w.id FROM audit_who w WHERE {same}) "
                f"WHERE {anyone}"
            )
        )
        bind.execute(sa.text("DROP INDEX tmp_audit_who_parts"))
    else:
        # Equality on a stand-in for NULL, so that PostgreSQL can hash-join.
        same = " AND ".join(
            f"COALESCE(w.{part}, chr(1)) = COALESCE(audit.{part}, chr(1))" for part in _PARTS
        )
        bind.execute(sa.text(f"UPDATE audit SET who_id = w.id FROM audit_who w WHERE {same}"))
    op.drop_index("ix_audit_person", table_name="audit")
    with op.batch_alter_table("audit") as batch:
        for part in _PARTS:
            batch.drop_column(part)
    op.create_index("ix_audit_who", "audit", ["who_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_audit_who", table_name="audit")
    with op.batch_alter_table("audit") as batch:
        batch.add_column(sa.Column("session_id", sa.String(64)))
        batch.add_column(sa.Column("chat_key", sa.String(512)))
        batch.add_column(sa.Column("person", sa.String(300)))
        batch.add_column(sa.Column("platform", sa.String(32)))
    for part in _PARTS:
        op.execute(
            f"UPDATE audit SET {part} = "
            f"(SELECT w.{part} FROM audit_who w WHERE w.id = audit.who_id) "
            "WHERE who_id IS NOT NULL"
        )
    with op.batch_alter_table("audit") as batch:
        batch.drop_column("who_id")
    op.create_index("ix_audit_person", "audit", ["person", "id"])
    op.drop_table("audit_who")
