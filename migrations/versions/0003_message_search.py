"""Full-text indexes over message content for search.

SQLite: an FTS5 external-content table ``messages_fts`` (content, tool_name) kept
current by triggers, and a trigram table ``messages_trigram`` for CJK and substring
queries when the SQLite build has the trigram tokenizer. PostgreSQL: a stored
``content_tsv`` column with a GIN index, and a pg_trgm index when the extension can be
created.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels = None
depends_on = None

# Only CJK queries use the trigram index, and they can only match text holding CJK, so
# only such rows are indexed there: trigram-indexing every message cost ~40% of the
# gateway's turns/s. The ranges mirror ``core.search.sanitize.has_cjk``.
CJK_GLOB = (
    "*[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff]*"
)

# (table, indexed columns, extra fts5 options, which rows: a SQL condition on the row)
_SQLITE_INDEXES = (
    ("messages_fts", ("content", "tool_name"), "", ""),
    ("messages_trigram", ("content",), ", tokenize='trigram'", "{row}.content GLOB :cjk"),
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _upgrade_sqlite()
    else:
        _upgrade_postgres()


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for table, _, _, _ in _SQLITE_INDEXES:
            for suffix in ("ai", "ad", "au"):
                op.execute(f"DROP TRIGGER IF EXISTS {table}_{suffix}")
            op.execute(f"DROP TABLE IF EXISTS {table}")
        return
    op.execute("DROP INDEX IF EXISTS ix_messages_content_trgm")
    op.execute("DROP INDEX IF EXISTS ix_messages_content_tsv")
    op.execute("ALTER TABLE messages DROP COLUMN IF EXISTS content_tsv")


def _upgrade_sqlite() -> None:
    for table, columns, options, rows in _SQLITE_INDEXES:
        if options and not _sqlite_has_trigram():
            continue
        _create_fts5(table, columns, options, rows)


def _sqlite_has_trigram() -> bool:
    bind = op.get_bind()
    try:
        bind.exec_driver_sql(
            "CREATE VIRTUAL TABLE temp.trigram_probe USING fts5(a, tokenize='trigram')"
        )
    except sa.exc.OperationalError:
        return False
    bind.exec_driver_sql("DROP TABLE temp.trigram_probe")
    return True


def _create_fts5(table: str, columns: tuple[str, ...], options: str, rows: str) -> None:
    names = ", ".join(columns)
    glob = "'" + CJK_GLOB + "'"

    def values(row: str) -> str:
        # SELECT ... WHERE keeps one trigger per event, so an update deletes before it inserts.
        picked = ", ".join(f"{row}.{column}" for column in columns)
        condition = f" WHERE {rows.format(row=row).replace(':cjk', glob)}" if rows else ""
        return f"{picked}{condition}"

    delete = (
        f"INSERT INTO {table}({table}, rowid, {names}) SELECT 'delete', old.id, {values('old')};"
    )
    insert = f"INSERT INTO {table}(rowid, {names}) SELECT new.id, {values('new')};"
    op.execute(
        f"CREATE VIRTUAL TABLE {table} USING fts5({names}, "
        f"content='messages', content_rowid='id'{options})"
    )
    op.execute(f"CREATE TRIGGER {table}_ai AFTER INSERT ON messages BEGIN {insert} END")
    op.execute(f"CREATE TRIGGER {table}_ad AFTER DELETE ON messages BEGIN {delete} END")
    op.execute(
        f"CREATE TRIGGER {table}_au AFTER UPDATE OF {names} ON messages BEGIN {delete} {insert} END"
    )
    # Index the rows written before this revision.
    backfill = f"INSERT INTO {table}(rowid, {names}) SELECT id, {names} FROM messages"
    if rows:
        backfill += f" WHERE {rows.format(row='messages').replace(':cjk', glob)}"
    op.execute(backfill)


def _upgrade_postgres() -> None:
    op.execute(
        "ALTER TABLE messages ADD COLUMN content_tsv tsvector GENERATED ALWAYS AS "
        "(to_tsvector('simple', coalesce(content, ''))) STORED"
    )
    op.execute("CREATE INDEX ix_messages_content_tsv ON messages USING gin (content_tsv)")
    if _postgres_has_trigram():
        op.execute(
            "CREATE INDEX ix_messages_content_trgm ON messages USING gin (content gin_trgm_ops)"
        )


def _postgres_has_trigram() -> bool:
    bind = op.get_bind()
    # A savepoint, because a failed statement aborts the whole PostgreSQL transaction.
    savepoint = bind.begin_nested()
    try:
        bind.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except sa.exc.DBAPIError:
        savepoint.rollback()
        return False
    savepoint.commit()
    return True
