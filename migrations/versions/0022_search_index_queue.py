"""SQLite: messages are indexed for search between write batches, not inside them.

Until now the insert triggers of migration 0003 tokenized every message inside the
transaction that stored it. Now an insert only queues the message's id in
``messages_fts_pending``; deleting queued ids (``core.store.search.queue``) indexes those
messages, through the ``messages_fts_index`` trigger. Deleting or editing a message
that is still queued leaves the indexes alone (it is not in them yet) and drops it from
the queue on delete, so the external-content indexes never hold a row they were not
given. The delete trigger does both in one body, in that order, because SQLite does not
order separate triggers. Nothing is queued on the way up: every existing message is
already indexed. The way down indexes what is queued and puts back 0003's triggers.
PostgreSQL is unchanged.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels = None
depends_on = None

PENDING = "messages_fts_pending"
# The CJK ranges of migration 0003: only such text is in the trigram index.
CJK = "'*[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff]*'"
_QUEUED = f"EXISTS (SELECT 1 FROM {PENDING} WHERE id = old.id)"


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    trigram = _has_trigram()
    for name in ("fts_ai", "fts_ad", "fts_au", "trigram_ai", "trigram_ad", "trigram_au"):
        op.execute(f"DROP TRIGGER IF EXISTS messages_{name}")
    op.execute(f"CREATE TABLE {PENDING} (id INTEGER PRIMARY KEY)")
    op.execute(
        "CREATE TRIGGER messages_fts_queue AFTER INSERT ON messages BEGIN "
        f"INSERT OR IGNORE INTO {PENDING}(id) VALUES (new.id); END"
    )
    forget = _fts_delete(f"NOT {_QUEUED}")
    if trigram:
        forget += _trigram_delete(f"NOT {_QUEUED} AND old.content GLOB {CJK}")
    op.execute(
        "CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN "
        f"{forget} DELETE FROM {PENDING} WHERE id = old.id; END"
    )
    op.execute(
        "CREATE TRIGGER messages_fts_au AFTER UPDATE OF content, tool_name ON messages "
        f"WHEN NOT {_QUEUED} BEGIN {_fts_delete('1')} {_fts_insert('new')} END"
    )
    index = _fts_insert("queued")
    if trigram:
        op.execute(
            "CREATE TRIGGER messages_trigram_au AFTER UPDATE OF content ON messages "
            f"WHEN NOT {_QUEUED} BEGIN "
            f"{_trigram_delete(f'old.content GLOB {CJK}')} {_trigram_insert('new')} END"
        )
        index += _trigram_insert("queued")
    op.execute(f"CREATE TRIGGER messages_fts_index AFTER DELETE ON {PENDING} BEGIN {index} END")


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    trigram = _has_trigram()
    op.execute(f"DELETE FROM {PENDING}")  # index what is queued, while the trigger is here
    for name in ("fts_queue", "fts_ad", "fts_au", "trigram_au", "fts_index"):
        op.execute(f"DROP TRIGGER IF EXISTS messages_{name}")
    op.execute(f"DROP TABLE {PENDING}")
    tables = [("fts", _fts_insert("new"), _fts_delete("1"), "content, tool_name")]
    if trigram:
        tables.append(
            (
                "trigram",
                _trigram_insert("new"),
                _trigram_delete(f"old.content GLOB {CJK}"),
                "content",
            )
        )
    for name, insert, delete, columns in tables:
        op.execute(f"CREATE TRIGGER messages_{name}_ai AFTER INSERT ON messages BEGIN {insert} END")
        op.execute(f"CREATE TRIGGER messages_{name}_ad AFTER DELETE ON messages BEGIN {delete} END")
        op.execute(
            f"CREATE TRIGGER messages_{name}_au AFTER UPDATE OF {columns} ON messages "
            f"BEGIN {delete} {insert} END"
        )


def _has_trigram() -> bool:
    found = op.get_bind().exec_driver_sql(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'messages_trigram'"
    )
    return found.first() is not None


def _fts_insert(row: str) -> str:
    """Index ``new`` (the trigger's row) or, with ``queued``, the message ``old.id``."""
    picked = _select(row, ("id", "content", "tool_name"))
    return f"INSERT INTO messages_fts(rowid, content, tool_name) {picked};"


def _fts_delete(where: str) -> str:
    return (
        "INSERT INTO messages_fts(messages_fts, rowid, content, tool_name) "
        f"SELECT 'delete', old.id, old.content, old.tool_name WHERE {where};"
    )


def _trigram_insert(row: str) -> str:
    content = "content" if row == "queued" else "new.content"
    picked = _select(row, ("id", "content"))
    return f"INSERT INTO messages_trigram(rowid, content) {picked} AND {content} GLOB {CJK};"


def _trigram_delete(where: str) -> str:
    return (
        "INSERT INTO messages_trigram(messages_trigram, rowid, content) "
        f"SELECT 'delete', old.id, old.content WHERE {where};"
    )


def _select(row: str, columns: tuple[str, ...]) -> str:
    if row == "queued":
        return f"SELECT {', '.join(columns)} FROM messages WHERE id = old.id"
    return "SELECT " + ", ".join(f"new.{c}" for c in columns) + " WHERE 1"
