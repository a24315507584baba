"""SQLite: the test for CJK text (which rows the trigram index holds) costs less.

Migration 0003 indexes in ``messages_trigram`` only the messages whose content matches
``GLOB '*[<the CJK ranges>]*'``. SQLite matches that pattern by reading the twelve
characters of the set again at every character of the text: about 20 us for a
300-character reply, which made it the largest single cost of the SessionDB writer's
thread. The triggers now ask two cheaper questions first, each of which every CJK text
answers yes, so the answer is the same for every row and nothing is reindexed:

- is any character outside ASCII (bytes and characters differ in number)?
- is any character above U+303F (``GLOB '*[^<U+0001>-<U+303F>]*'``, a one-range set)?

ASCII text skips the pattern; text with only Latin accents, curly quotes or dashes
tests a one-range set. The way down puts back 0022's triggers. PostgreSQL is unchanged.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels = None
depends_on = None

PENDING = "messages_fts_pending"
# The CJK ranges of migration 0003; the lowest is U+3040.
CJK = "'*[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff]*'"
ABOVE_3040 = "'*[^\x01-\u303f]*'"
_QUEUED = f"EXISTS (SELECT 1 FROM {PENDING} WHERE id = old.id)"


def cjk(content: str, *, cheap: bool) -> str:
    """Whether ``content`` holds CJK text; ``cheap``: the questions that rule most text
    out go first (a trigger's WHERE stops at the first that fails)."""
    pattern = f"{content} GLOB {CJK}"
    if not cheap:
        return pattern
    return (
        f"length(CAST({content} AS BLOB)) <> length({content}) "
        f"AND {content} GLOB {ABOVE_3040} AND {pattern}"
    )


def upgrade() -> None:
    _triggers(cheap=True)


def downgrade() -> None:
    _triggers(cheap=False)


def _triggers(*, cheap: bool) -> None:
    """Recreate 0022's three triggers that test for CJK text (with the trigram index)."""
    if op.get_bind().dialect.name != "sqlite" or not _has_trigram():
        return
    for name in ("fts_ad", "trigram_au", "fts_index"):
        op.execute(f"DROP TRIGGER IF EXISTS messages_{name}")
    old = cjk("old.content", cheap=cheap)
    op.execute(
        "CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN "
        "INSERT INTO messages_fts(messages_fts, rowid, content, tool_name) "
        f"SELECT 'delete', old.id, old.content, old.tool_name WHERE NOT {_QUEUED};"
        f"{_trigram_delete(f'NOT {_QUEUED} AND {old}')} "
        f"DELETE FROM {PENDING} WHERE id = old.id; END"
    )
    op.execute(
        "CREATE TRIGGER messages_trigram_au AFTER UPDATE OF content ON messages "
        f"WHEN NOT {_QUEUED} BEGIN {_trigram_delete(old)} "
        "INSERT INTO messages_trigram(rowid, content) SELECT new.id, new.content "
        f"WHERE {cjk('new.content', cheap=cheap)}; END"
    )
    op.execute(
        f"CREATE TRIGGER messages_fts_index AFTER DELETE ON {PENDING} BEGIN "
        "INSERT INTO messages_fts(rowid, content, tool_name) "
        "SELECT id, content, tool_name FROM messages WHERE id = old.id;"
        "INSERT INTO messages_trigram(rowid, content) SELECT id, content FROM messages "
        f"WHERE id = old.id AND {cjk('content', cheap=cheap)}; END"
    )


def _trigram_delete(where: str) -> str:
    return (
        "INSERT INTO messages_trigram(messages_trigram, rowid, content) "
        f"SELECT 'delete', old.id, old.content WHERE {where};"
    )


def _has_trigram() -> bool:
    found = op.get_bind().exec_driver_sql(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'messages_trigram'"
    )
    return found.first() is not None
