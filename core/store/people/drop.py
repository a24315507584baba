"""Deleting rows that belong to a session or an inbox message, in foreign-key order.

Shared by forgetting a person and by retention. Deleting a message fires the full-text
triggers of migration 0003 (FTS5 and trigram on SQLite); on PostgreSQL the ``tsvector``
is a column of the row and goes with it.
"""

from __future__ import annotations

from core.store.tx import Tx

_OUTBOX_OF_SESSION = "SELECT id FROM outbox WHERE session_id = :id"
_OUTBOX_OF_INBOX = "SELECT id FROM outbox WHERE inbox_id = :id"
_INBOX_OF_SESSION = "SELECT id FROM inbox WHERE session_id = :id"
_SESSION_ROWS = (
    "DELETE FROM approvals WHERE session_id = :id",
    "DELETE FROM approval_grants WHERE session_id = :id",
    "DELETE FROM reviews WHERE session_id = :id",
    "DELETE FROM cron_runs WHERE session_id = :id",
)
_COUNT_MESSAGES = "SELECT count(*) FROM messages WHERE session_id = :id"


def drop_session(tx: Tx, session_id: str) -> int:
    """Delete a session with its messages, replies, inbox rows, approvals, reviews and
    scheduled runs; return how many messages went. A later session of its lineage loses
    its parent link (the parent is gone), not its own rows."""
    args = {"id": session_id}
    messages = int(tx.scalar(_COUNT_MESSAGES, args) or 0)
    for row in tx.fetch(_OUTBOX_OF_SESSION, args):
        drop_reply(tx, int(row["id"]))
    for sql in _SESSION_ROWS:
        tx.execute(sql, args)
    tx.execute("DELETE FROM messages WHERE session_id = :id", args)
    for row in tx.fetch(_INBOX_OF_SESSION, args):
        drop_inbox(tx, int(row["id"]))
    tx.execute("UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = :id", args)
    tx.execute("DELETE FROM sessions WHERE id = :id", args)
    return messages


def drop_reply(tx: Tx, outbox_id: int) -> None:
    """Delete one queued or delivered reply and its files."""
    tx.execute("DELETE FROM outbox_files WHERE outbox_id = :id", {"id": outbox_id})
    tx.execute("DELETE FROM outbox WHERE id = :id", {"id": outbox_id})


def drop_inbox(tx: Tx, inbox_id: int) -> None:
    """Delete one inbound message with the replies to it and the approvals it paused for."""
    args = {"id": inbox_id}
    for row in tx.fetch(_OUTBOX_OF_INBOX, args):
        drop_reply(tx, int(row["id"]))
    tx.execute("DELETE FROM approvals WHERE inbox_id = :id", args)
    tx.execute("DELETE FROM inbox WHERE id = :id", args)


def recount(tx: Tx, session_id: str) -> None:
    """Set a session's message count to what it holds after some of it was deleted."""
    tx.execute(
        "UPDATE sessions SET message_count = (SELECT count(*) FROM messages "
        "WHERE messages.session_id = sessions.id) WHERE id = :id",
        {"id": session_id},
    )
