"""Compaction in the store: end a session and open its child in one transaction."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from core.errors import StoreError
from core.store import sessions as session_ops
from core.store.records import NewMessage, SessionRow
from core.store.turns import ADD_MESSAGE, message_row
from core.store.tx import Tx


def compact(
    tx: Tx, parent_id: str, at: float, child: SessionRow, messages: Sequence[NewMessage]
) -> SessionRow:
    """End ``parent_id`` (``end_reason='compaction'``) and open ``child`` with ``messages``.

    All or nothing: after a crash either the parent is still active or the child is.
    """
    session_ops.end(tx, parent_id, "compaction", at)
    opened = session_ops.open_session(tx, child)
    if opened.id != child.id:
        raise StoreError("another session became active while compacting; try again")
    if messages:
        tx.messages_added(len(messages))
        tx.executemany(ADD_MESSAGE, [message_row(m, child.id) for m in messages])
    return opened


def record_detached(tx: Tx, row: SessionRow, messages: Sequence[NewMessage]) -> None:
    """Store a finished one-off session (a scheduled run) with its transcript, already ended.

    A session of the same key left active by a crash is ended first (``abandoned``).
    """
    active = tx.fetch(
        "SELECT id FROM sessions WHERE session_key = :key AND ended_at IS NULL",
        {"key": row.session_key},
    )
    for found in active:
        session_ops.end(tx, found["id"], "abandoned", row.started_at)
    opened = session_ops.open_session(tx, dataclasses.replace(row, ended_at=None, end_reason=None))
    if opened.id != row.id:
        raise StoreError("another session of this scheduled job is active; try again")
    if messages:
        tx.messages_added(len(messages))
        tx.executemany(ADD_MESSAGE, [message_row(m, row.id) for m in messages])
    session_ops.end(tx, row.id, row.end_reason or "done", row.ended_at or row.last_active_at)
