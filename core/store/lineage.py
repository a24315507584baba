"""Compaction in the store: end a session and open its child in one transaction."""

from __future__ import annotations

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
        tx.executemany(ADD_MESSAGE, [message_row(m, child.id) for m in messages])
    return opened
