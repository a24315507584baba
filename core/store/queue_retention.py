"""The delivery queue's retention: handled messages and sent replies deleted once old.

The inbox and the outbox are the gateway's delivery queue. Once a message's turn has
finished and every reply to it has gone out, their rows serve only for a while:
a redelivery of the same message (a webhook client's retry, a platform's redelivery) is
answered from them, a webhook client polls or downloads a reply's files through them,
and a platform that reads its history again after a restart (``catch_up_max_age``) looks
at the most recent of them. The transcript (``messages``), the usage and the audit
ledger do not depend on them. Kept for good they are only disk: about 480 bytes a turn.
``prune_messages`` and ``prune_lone_replies`` delete those received (or, for a reply to
no message, queued) before a cut-off, oldest first, a batch per transaction.

Kept whatever their age:

- a message still waiting for its turn, one with a reply still to send, and one an
  approval points at (the approval keeps its history);
- a reply still to send, and an approval's prompt.

Deleting the newest rows is safe: an id is never handed out again (SQLite's
``AUTOINCREMENT`` since migration 0024, PostgreSQL's sequences), so a webhook client's
``after`` cursor stays valid.

A reply goes with the message it answers; a reply to no message (a notice, a scheduled
job's delivery) goes on its own age. Media files stay where they are (``media/``), as
they do when a session is pruned: a message of the transcript may show the same file.
"""

from __future__ import annotations

from core.record import record
from core.store.tx import Tx

# Ids are taken in the order rows arrive, so the oldest rows are the lowest ids: a scan
# from ``after`` stops at the first row young enough to keep.
_OLDEST_INBOX = "SELECT id, received_at AS at FROM inbox WHERE id > :after ORDER BY id LIMIT :limit"
# Every reply, so that the scan also stops at the first young one; the lone ones among
# them are picked by ``_SENT_LONE``.
_OLDEST_REPLIES = (
    "SELECT id, created_at AS at FROM outbox WHERE id > :after ORDER BY id LIMIT :limit"
)
# Handled messages in (after, upto] with nothing left to do and nothing pointing at them.
_HANDLED = (
    "SELECT i.id FROM inbox i WHERE i.id > :after AND i.id <= :upto "
    "AND i.status <> 'pending' "
    "AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.inbox_id = i.id AND o.status = 'pending') "
    "AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.inbox_id = i.id)"
)
_SENT_LONE = (
    "SELECT o.id FROM outbox o WHERE o.id > :after AND o.id <= :upto "
    "AND o.inbox_id IS NULL AND o.status <> 'pending' "
    "AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.prompt_outbox_id = o.id)"
)
_REPLIES_OF_HANDLED = f"SELECT id FROM outbox WHERE inbox_id IN ({_HANDLED})"


@record
class QueuePruned:
    """One batch: how many messages and replies went, and where the next batch starts
    (``None``: the rest is too young, nothing more to look at)."""

    messages: int
    replies: int
    next_after: int | None


def prune_messages(tx: Tx, before: float, after: int, limit: int) -> QueuePruned:
    """Delete handled inbox rows received before ``before``, with their replies and the
    replies' files, among the ``limit`` oldest with an id above ``after``."""
    upto, next_after = _old_range(tx, _OLDEST_INBOX, before, after, limit)
    if upto is None:
        return QueuePruned(0, 0, None)
    args = {"after": after, "upto": upto}
    messages = int(tx.scalar(f"SELECT count(*) FROM ({_HANDLED}) AS handled", args))
    replies = int(tx.scalar(f"SELECT count(*) FROM ({_REPLIES_OF_HANDLED}) AS r", args))
    tx.execute(f"DELETE FROM outbox_files WHERE outbox_id IN ({_REPLIES_OF_HANDLED})", args)
    tx.execute(f"DELETE FROM outbox WHERE inbox_id IN ({_HANDLED})", args)
    tx.execute(f"DELETE FROM inbox WHERE id IN ({_HANDLED})", args)
    return QueuePruned(messages, replies, next_after)


def prune_lone_replies(tx: Tx, before: float, after: int, limit: int) -> QueuePruned:
    """Delete sent replies to no message queued before ``before``, with their files,
    among the ``limit`` oldest with an id above ``after``."""
    upto, next_after = _old_range(tx, _OLDEST_REPLIES, before, after, limit)
    if upto is None:
        return QueuePruned(0, 0, None)
    args = {"after": after, "upto": upto}
    replies = int(tx.scalar(f"SELECT count(*) FROM ({_SENT_LONE}) AS sent", args))
    tx.execute(f"DELETE FROM outbox_files WHERE outbox_id IN ({_SENT_LONE})", args)
    tx.execute(f"DELETE FROM outbox WHERE id IN ({_SENT_LONE})", args)
    return QueuePruned(0, replies, next_after)


def _old_range(
    tx: Tx, oldest: str, before: float, after: int, limit: int
) -> tuple[int | None, int | None]:
    """The last id of the run of rows older than ``before`` among the ``limit`` oldest
    above ``after`` (``None``: none is), and where the next batch starts (``None``: a
    younger row ended the run, or no row is left)."""
    rows = tx.fetch(oldest, {"after": after, "limit": limit})
    upto = None
    for row in rows:
        if row["at"] >= before:
            return upto, None
        upto = int(row["id"])
    return upto, (upto if len(rows) == limit else None)
