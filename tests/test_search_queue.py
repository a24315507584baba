"""SQLite indexes messages for search between write batches (``core.store.search.queue``):
a search still sees every committed message, a message edited or deleted before it was
indexed leaves the indexes exact, and nothing a killed gateway queued is lost."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from sqlalchemy import delete, update

from core.store.db import SessionDB
from core.store.engine import create_engines
from core.store.records import NewMessage, TurnOutcome
from core.store.schema import messages
from core.store.search.matches import SearchScope
from core.store.search.queue import BEHIND, CHUNK, PENDING
from core.store.tx import Tx
from migrations.runner import downgrade
from tests.test_search_engine import ALL, _migrated, add, ids, index_queued
from tests.test_store import message, migrate, session_row

T0 = 1_780_000_000.0
EVERYWHERE = SearchScope("webhook", "x", None, "x", mode="all")


def raw_add(path: Path, content: str) -> int:
    """A message written the way another process (or a gateway killed before its writer
    went idle) leaves it: committed and queued, not yet indexed."""
    with sqlite3.connect(path) as conn:
        if conn.execute("SELECT 1 FROM sessions WHERE id = 's1'").fetchone() is None:
            conn.execute(
                "INSERT INTO sessions (id, session_key, platform, chat_id, user_id, started_at, "
                "last_active_at, provider, model, message_count, turn_count, tool_call_count, "
                "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens) VALUES "
                "('s1', 'webhook:c1', 'webhook', 'c1', 'u1', ?, ?, 'offline', 'offline', "
                "0, 0, 0, 0, 0, 0, 0)",
                (T0, T0),
            )
        cursor = conn.execute(
            "INSERT INTO messages (session_id, role, content, created_at) "
            "VALUES ('s1', 'user', ?, ?)",
            (content, T0),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid


def indexed(path: Path, word: str) -> int:
    """Rows of the FTS index matching ``word``, read without indexing anything first."""
    with sqlite3.connect(path) as conn:
        query = "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?"
        return int(conn.execute(query, (word,)).fetchone()[0])


def queued(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {PENDING}").fetchone()[0])


def integrity_check(path: Path) -> None:
    """Raises if an external-content index drifted from the rows it was given."""
    with sqlite3.connect(path) as conn:
        for table in ("messages_fts", "messages_trigram"):
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")


async def migrated(path: Path) -> None:
    await migrate(f"sqlite:///{path}")


async def test_a_message_edited_or_deleted_while_queued_leaves_the_indexes_exact(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    async with _migrated(f"sqlite:///{path}") as db:
        edited = await add(db, "s-alice", "the quokka smiles")
        async with db.begin() as conn:
            await conn.execute(
                update(messages).where(messages.c.id == edited).values(content="去东京塔 wombat")
            )
        dropped = await add(db, "s-alice", "a fleeting narwhal")
        async with db.begin() as conn:
            await conn.execute(delete(messages).where(messages.c.id == dropped))
        assert queued(path) == 1  # the edited one; the deleted one left the queue with it
        # SQLite hands the freed rowid to the next message: it must be indexed as itself.
        reused = await add(db, "s-alice", "a lasting pelican")
        assert reused == dropped

        assert await ids(db, "quokka", ALL) == []
        assert await ids(db, "wombat", ALL) == [edited]
        assert await ids(db, "东京塔", ALL) == [edited]
        assert await ids(db, "narwhal", ALL) == []
        assert await ids(db, "pelican", ALL) == [reused]
        integrity_check(path)
        # Once indexed, edits and deletes reach the indexes at once, as before.
        async with db.begin() as conn:
            await conn.execute(delete(messages).where(messages.c.id == edited))
        assert indexed(path, "wombat") == 0
        integrity_check(path)


# Whether each text holds CJK (migration 0003's ranges): the trigram index's rows. The
# triggers rule text out with cheaper questions first (migration 0023); these are the
# texts each of those questions lets through or stops.
MIXED = {
    "plain ascii words": False,
    "café — it’s naïve": False,
    "party 🎉 time": False,
    "\u3000 an ideographic space, \uff21 a fullwidth A": False,
    "naïve 東京 trip": True,
    "🎉東京タワー": True,
    "한국어 text": True,
    "ひらがな only": True,
    "\U00020000 an extension-B ideograph": True,
}


def trigram_rows(path: Path) -> set[int]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT id FROM messages_trigram_docsize")}


async def test_the_trigram_index_holds_exactly_the_messages_with_cjk(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    texts = list(MIXED)
    async with _migrated(f"sqlite:///{path}") as db:
        added = [await add(db, "s-alice", text) for text in texts]
        await index_queued(db)
        assert trigram_rows(path) == {i for i, t in zip(added, texts, strict=True) if MIXED[t]}
        # Indexed rows edited to another text (most to the other kind), half then deleted.
        edited = texts[4:] + texts[:4]
        async with db.begin() as conn:
            for message_id, text in zip(added, edited, strict=True):
                stmt = update(messages).where(messages.c.id == message_id).values(content=text)
                await conn.execute(stmt)
        assert trigram_rows(path) == {i for i, t in zip(added, edited, strict=True) if MIXED[t]}
        async with db.begin() as conn:
            await conn.execute(delete(messages).where(messages.c.id.in_(added[::2])))
        kept = {i for i, t in zip(added, edited, strict=True) if MIXED[t] and i not in added[::2]}
        assert trigram_rows(path) == kept
        tokyo = [i for i, t in zip(added, edited, strict=True) if "東京" in t and i in kept]
        assert await ids(db, "東京タワー", ALL) == tokyo
        integrity_check(path)


async def test_a_search_sees_what_another_process_just_wrote(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    await migrated(path)
    async with SessionDB(f"sqlite:///{path}") as db:
        written = raw_add(path, "an albatross overhead")
        assert indexed(path, "albatross") == 0  # queued: this writer had no batch since
        async with db.search.reading() as reader:
            found = await reader.find_messages("albatross", EVERYWHERE)
        assert [m.message_id for m in found] == [written]
        assert queued(path) == 0


async def test_opening_indexes_what_a_killed_gateway_left_queued(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    await migrated(path)
    raw_add(path, "a stranded capybara")
    raw_add(path, "猫咪藏在盒子里")
    for n in range(2 * CHUNK + 3):  # more than one indexing step's worth
        raw_add(path, f"a drifting gull {n}")
    assert queued(path) == 2 * CHUNK + 5
    async with SessionDB(f"sqlite:///{path}"):
        assert queued(path) == 0
        assert indexed(path, "capybara") == 1
        assert indexed(path, "gull") == 2 * CHUNK + 3
        with sqlite3.connect(path) as conn:
            trigram = "SELECT count(*) FROM messages_trigram WHERE messages_trigram MATCH '猫咪藏'"
            assert conn.execute(trigram).fetchone()[0] == 1
    integrity_check(path)


async def _turn(db: SessionDB) -> None:
    session = await db.open_session(session_row("s-turn"))
    accepted = await db.accept(message(1, text_="a restless magpie"), "webhook:c1")
    await db.finish_turn(
        TurnOutcome(
            item=accepted.item,
            status="done",
            processed_at=T0 + 1,
            session_id=session.id,
            messages=[NewMessage(role="user", content="a restless magpie", created_at=T0)],
        )
    )


async def _compaction(db: SessionDB) -> None:
    parent = await db.open_session(session_row("s-parent"))
    said = [NewMessage(role="user", content="a restless magpie", created_at=T0)]
    await db.compact(parent.id, T0 + 1, session_row("s-child"), said)


async def _scheduled_run(db: SessionDB) -> None:
    said = [NewMessage(role="assistant", content="a restless magpie", created_at=T0)]
    await db.record_detached(session_row("s-cron", "cron:job-1"), said)


@pytest.mark.parametrize("store", [_turn, _compaction, _scheduled_run])
async def test_the_writer_indexes_stored_messages_without_being_asked(
    tmp_path: Path, store: Callable[[SessionDB], Awaitable[None]]
) -> None:
    path = tmp_path / "state.db"
    await migrated(path)
    async with SessionDB(f"sqlite:///{path}") as db:
        await store(db)
        # Nothing on the loop waits for that work, so nothing signals it: watch the file.
        assert await asyncio.to_thread(_emptied, path, 10.0)
        assert indexed(path, "magpie") == 1


def _emptied(path: Path, seconds: float) -> bool:
    """Whether the queue empties within ``seconds`` (read every 10 ms)."""
    deadline = time.monotonic() + seconds
    while queued(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


async def test_downgrade_indexes_the_queue_and_restores_indexing_on_insert(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    await migrated(path)
    raw_add(path, "a queued ibis")
    engines = create_engines(f"sqlite:///{path}")
    try:
        await downgrade(engines.write, "0021")
    finally:
        await engines.dispose()
    assert indexed(path, "ibis") == 1
    raw_add(path, "an immediate egret")
    assert indexed(path, "egret") == 1  # 0003's triggers index in the same transaction
    integrity_check(path)
    await migrated(path)
    raw_add(path, "a later stork")
    assert queued(path) == 1


async def test_a_writer_never_idle_still_keeps_up_with_indexing(tmp_path: Path) -> None:
    """Past ``BEHIND`` stored messages waiting, a chunk is indexed between two batches:
    a writer that always had a batch waiting would otherwise never index."""
    path = tmp_path / "state.db"
    await migrated(path)
    said = [
        NewMessage(role="assistant", content=f"a busy starling {n}", created_at=T0)
        for n in range(BEHIND + CHUNK + 4)
    ]

    def waiting(tx: Tx) -> int:
        return int(tx.scalar(f"SELECT count(*) FROM {PENDING}", {}))

    async with SessionDB(f"sqlite:///{path}", max_batch=1) as db:  # one write a batch
        _, first, second = await asyncio.gather(
            db.record_detached(session_row("s-cron", "cron:job-1"), said),
            db.write(waiting),
            db.write(waiting),
        )
    assert (first, second) == (len(said) - CHUNK, len(said) - 2 * CHUNK)
    assert queued(path) == 0  # the rest once nothing waited (and at close)
    assert indexed(path, "starling") == len(said)
