"""Migration 0024 on SQLite: ``inbox``, ``outbox`` and ``approvals`` keep their rows, ids
and links through the rebuild, and afterwards a deleted row's id is not handed out
again (before it, the next row took it)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from core.store.schema_version import downgrade_schema, upgrade_schema

INBOX = (
    "INSERT INTO inbox (id, platform, dedup_key, platform_message_id, chat_id, user_id,"
    " text, session_key, status, received_at) VALUES"
    " (?, 'webhook', ?, ?, 'c1', 'u1', 'hi', 'webhook:c1', 'done', 1.0)"
)
OUTBOX = (
    "INSERT INTO outbox (id, inbox_id, platform, chat_id, text, status, created_at)"
    " VALUES (?, ?, 'webhook', 'c1', 'hello', 'delivered', 1.0)"
)
FILE = (
    "INSERT INTO outbox_files (id, outbox_id, position, sha256, mime, kind, name, size)"
    " VALUES ('f1', 1, 0, 'ab', 'text/plain', 'file', 'a.txt', 2)"
)
APPROVAL = (
    "INSERT INTO approvals (id, inbox_id, session_id, session_key, platform, chat_id,"
    " tool_call_id, tool_name, arguments, turn_messages, status, created_at) VALUES"
    " (1, 2, 's', 'webhook:c1', 'webhook', 'c1', 't', 'shell', '{}', '[]', 'denied', 1.0)"
)
NEXT_OUTBOX = (
    "INSERT INTO outbox (platform, chat_id, text, status, created_at)"
    " VALUES ('webhook', 'c1', 'next', 'pending', 2.0)"
)


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def _fill(path: Path) -> None:
    with _connect(path) as conn:
        for i in (1, 2, 3):
            conn.execute(INBOX, (i, f"m{i}", f"m{i}"))
            conn.execute(OUTBOX, (i, i))
        conn.execute(FILE)
        conn.execute(APPROVAL)


def _rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    with _connect(path) as conn:
        return {
            "inbox": conn.execute("SELECT id, dedup_key FROM inbox ORDER BY id").fetchall(),
            "outbox": conn.execute("SELECT id, inbox_id FROM outbox ORDER BY id").fetchall(),
            "files": conn.execute("SELECT id, outbox_id FROM outbox_files").fetchall(),
            "approvals": conn.execute("SELECT id, inbox_id FROM approvals").fetchall(),
            "broken links": conn.execute("PRAGMA foreign_key_check").fetchall(),
        }


def _id_after_deleting_the_newest_reply(path: Path) -> int:
    with _connect(path) as conn:
        conn.execute("DELETE FROM outbox WHERE id = (SELECT max(id) FROM outbox)")
        new_id = conn.execute(NEXT_OUTBOX).lastrowid
        assert new_id is not None
        return new_id


async def test_the_rebuild_keeps_rows_and_ids_are_not_reused_after_it(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    url = f"sqlite:///{db}"
    await upgrade_schema(url)
    await downgrade_schema(url, "0023")
    _fill(db)
    reused = _id_after_deleting_the_newest_reply(db)
    before = _rows(db)

    await upgrade_schema(url)
    after = _rows(db)
    fresh = _id_after_deleting_the_newest_reply(db)

    assert reused == 3  # before 0024: the deleted reply's id, handed out again
    assert after == before
    assert after["broken links"] == []
    assert fresh == 4


async def test_the_way_down_keeps_rows_too(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    url = f"sqlite:///{db}"
    await upgrade_schema(url)
    _fill(db)
    before = _rows(db)

    await downgrade_schema(url, "0023")

    assert _rows(db) == before
