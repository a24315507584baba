"""SQLite's full-text indexes, filled between write batches rather than inside them.

A message's insert only queues its id in ``messages_fts_pending`` (a trigger,
migration 0022). After a commit that stored messages, the writer's thread indexes them
when it has no batch to run, or a chunk between two batches once ``BEHIND`` wait
(``index_some``: one statement, so the tokenizing runs outside the GIL beside the event
loop); ``SearchStore.reading`` indexes whatever is still queued before a search reads
(``index_all``), so a search always sees every committed message. Deleting or editing a
queued message never touches the indexes: it was never in them.

Indexing inside each turn's transaction cost the writer about a third of its CPU per
turn, on the thread every turn waits for; ``bench/throughput.py`` shows the difference.
PostgreSQL keeps its ``tsvector`` column in the row and queues nothing.
"""

from __future__ import annotations

import sqlite3

from core.store.tx import Tx

PENDING = "messages_fts_pending"

# Deleting a queued id fires ``messages_fts_index``, which indexes that message.
_INDEX_SOME = f"DELETE FROM {PENDING} WHERE id IN (SELECT id FROM {PENDING} ORDER BY id LIMIT ?)"
_INDEX_ALL = f"DELETE FROM {PENDING}"

# Messages one idle step indexes: a few milliseconds of the write lock at most, so a
# batch arriving meanwhile waits little.
CHUNK = 32
# Messages waiting past which the writer indexes a chunk before its next batch, so a
# writer that always has a batch waiting still keeps up (``SqliteRunner.behind``).
BEHIND = 8 * CHUNK


def index_some(conn: sqlite3.Connection, limit: int = CHUNK) -> int:
    """Index up to ``limit`` queued messages in a transaction of their own (``conn`` in
    autocommit, outside any transaction); returns how many were queued."""
    return conn.execute(_INDEX_SOME, (limit,)).rowcount


def index_all(tx: Tx) -> None:
    """Index every queued message (a write op: ``SessionDB`` runs it before a search)."""
    tx.execute(_INDEX_ALL, {})


def has_queue(conn: sqlite3.Connection) -> bool:
    """Whether this database queues messages for indexing (migrated to 0022 or later)."""
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (PENDING,)
    ).fetchone()
    return row is not None
