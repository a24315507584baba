"""find_messages against real SQLite and PostgreSQL databases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import delete, insert, update
from sqlalchemy.ext.asyncio import AsyncEngine

from core.store.engine import create_engines
from core.store.schema import messages, sessions
from core.store.search import matches as search_matches
from core.store.search import queue
from core.store.search.matches import SearchScope, find_messages
from core.store.tx import SqlAlchemyTx
from migrations.runner import upgrade
from tests.postgres import postgres_database

T0 = 1_780_000_000.0
ALICE_DM = SearchScope("telegram", "alice", None, "alice")
BOB_DM = SearchScope("telegram", "bob", None, "bob")
GROUP = SearchScope("telegram", "g1", None, "alice")


@pytest.fixture(params=["sqlite", "postgres"])
async def db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    """A migrated database holding sessions of two users and a group."""
    if request.param == "sqlite":
        async with _migrated(f"sqlite:///{tmp_path / 'state.db'}") as engine:
            yield engine
        return
    async with postgres_database() as url, _migrated(url) as engine:
        yield engine


class _migrated:  # noqa: N801 - reads as a context manager function
    def __init__(self, url: str) -> None:
        self._engines = create_engines(url)

    async def __aenter__(self) -> AsyncEngine:
        await upgrade(self._engines.write)
        async with self._engines.write.begin() as conn:
            for sid, chat, user, key in [
                ("s-alice", "alice", "alice", "telegram:alice"),
                ("s-bob", "bob", "bob", "telegram:bob"),
                ("s-group", "g1", "alice", "telegram:g1"),
                ("s-group-u", "g1", "bob", "telegram:g1:u=bob"),
                ("s-other", "alice", "alice", "webhook:alice"),
            ]:
                platform = key.split(":")[0]
                await conn.execute(
                    insert(sessions).values(
                        id=sid,
                        session_key=key,
                        platform=platform,
                        chat_id=chat,
                        user_id=user,
                        started_at=T0,
                        last_active_at=T0,
                        provider="offline",
                        model="offline",
                    )
                )
        return self._engines.write

    async def __aexit__(self, *exc: object) -> None:
        await self._engines.dispose()


async def add(engine: AsyncEngine, session_id: str, content: str, role: str = "user") -> int:
    async with engine.begin() as conn:
        result = await conn.execute(
            insert(messages)
            .values(session_id=session_id, role=role, content=content, created_at=T0)
            .returning(messages.c.id)
        )
        return int(result.scalar_one())


async def index_queued(engine: AsyncEngine) -> None:
    """What ``SearchStore.reading`` does first on SQLite: index the queued messages."""
    if engine.dialect.name == "sqlite":
        async with engine.begin() as conn:
            await conn.run_sync(lambda sync: queue.index_all(SqlAlchemyTx(sync)))


async def ids(engine: AsyncEngine, query: str, scope: SearchScope, **kw: object) -> list[int]:
    await index_queued(engine)
    async with engine.connect() as conn:
        found = await find_messages(conn, query, scope, **kw)  # type: ignore[arg-type]
    return [match.message_id for match in found]


ALL = SearchScope("telegram", "x", None, "x", mode="all")


async def test_index_follows_inserts_updates_and_deletes(db: AsyncEngine) -> None:
    first = await add(db, "s-alice", "the quokka smiles")
    assert await ids(db, "quokka", ALL) == [first]
    async with db.begin() as conn:
        await conn.execute(
            update(messages).where(messages.c.id == first).values(content="a wombat now")
        )
    assert await ids(db, "quokka", ALL) == []
    assert await ids(db, "wombat", ALL) == [first]
    async with db.begin() as conn:
        await conn.execute(delete(messages).where(messages.c.id == first))
    assert await ids(db, "wombat", ALL) == []


async def test_only_user_and_assistant_messages(db: AsyncEngine) -> None:
    said = await add(db, "s-alice", "marmalade please")
    answered = await add(db, "s-alice", "marmalade coming", role="assistant")
    await add(db, "s-alice", "marmalade tool output", role="tool")
    assert sorted(await ids(db, "marmalade", ALL)) == [said, answered]


async def test_chat_scope_keeps_chats_apart(db: AsyncEngine) -> None:
    alice = await add(db, "s-alice", "secret plan zebra")
    bob = await add(db, "s-bob", "secret plan zebra")
    group = await add(db, "s-group", "secret plan zebra")
    assert await ids(db, "zebra", ALICE_DM) == [alice]
    assert await ids(db, "zebra", BOB_DM) == [bob]
    assert await ids(db, "zebra", GROUP) == [group]


async def test_user_scope_adds_only_the_users_direct_chats(db: AsyncEngine) -> None:
    alice = await add(db, "s-alice", "lighthouse keeper")
    await add(db, "s-bob", "lighthouse keeper")
    group = await add(db, "s-group", "lighthouse keeper")
    # Said in the group, so every member of it may find it.
    group_bob = await add(db, "s-group-u", "lighthouse keeper")
    await add(db, "s-other", "lighthouse keeper")  # another platform's "alice"
    user = SearchScope("telegram", "g1", None, "alice", mode="user")
    assert sorted(await ids(db, "lighthouse", user)) == [alice, group, group_bob]
    bob = SearchScope("telegram", "bob", None, "bob", mode="user")
    assert len(await ids(db, "lighthouse", bob)) == 1


async def test_excluded_sessions_are_skipped(db: AsyncEngine) -> None:
    await add(db, "s-alice", "kettle")
    other = await add(db, "s-bob", "kettle")
    assert await ids(db, "kettle", ALL, exclude_session_ids=["s-alice"]) == [other]


async def test_few_matches_rank_many_matches_recency(
    db: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    strong = await add(db, "s-alice", "otter otter otter")
    weak = await add(db, "s-alice", "an otter among many other words in a long sentence")
    await index_queued(db)
    async with db.connect() as conn:
        ranked = await find_messages(conn, "otter", ALL)
    assert [m.message_id for m in ranked] == [strong, weak]
    assert ranked[0].score > ranked[1].score > 0
    monkeypatch.setattr(search_matches, "RANK_LIMIT", 1)
    async with db.connect() as conn:
        recent = await find_messages(conn, "otter", ALL)
    assert [(m.message_id, m.score) for m in recent] == [(weak, 0.0), (strong, 0.0)]


async def test_phrase_and_prefix(db: AsyncEngine) -> None:
    hit = await add(db, "s-alice", "deploy the blue-green rollout")
    await add(db, "s-alice", "green blue deploy")
    assert await ids(db, '"green rollout"', ALL) == [hit]
    assert await ids(db, "blue-green", ALL) == [hit]
    assert await ids(db, "rollo*", ALL) == [hit]


async def test_cjk_long_and_short_queries(db: AsyncEngine) -> None:
    tokyo = await add(db, "s-alice", "我明天去东京塔看看")
    await add(db, "s-alice", "我明天去大阪")
    assert await ids(db, "东京塔", ALL) == [tokyo]
    assert await ids(db, "东京", ALL) == [tokyo]
    assert await ids(db, "东京", BOB_DM) == []


async def test_nothing_searchable_finds_nothing(db: AsyncEngine) -> None:
    await add(db, "s-alice", "anything")
    assert await ids(db, '"" ** AND', ALL) == []


async def test_cjk_index_follows_updates_between_cjk_and_latin_text(db: AsyncEngine) -> None:
    # Only CJK-bearing rows go into the trigram index; an update moving a row in or out
    # of CJK must keep that index exact (no stale hit, no missed one).
    row = await add(db, "s-alice", "plain latin text first")
    assert await ids(db, "东京塔", ALL) == []
    async with db.begin() as conn:
        await conn.execute(update(messages).where(messages.c.id == row).values(content="去东京塔"))
    assert await ids(db, "东京塔", ALL) == [row]
    async with db.begin() as conn:
        await conn.execute(
            update(messages).where(messages.c.id == row).values(content="back to latin")
        )
    assert await ids(db, "东京塔", ALL) == []
    assert await ids(db, "latin", ALL) == [row]
    if db.dialect.name == "sqlite":
        async with db.connect() as conn:
            integrity = "INSERT INTO messages_trigram(messages_trigram) VALUES ('integrity-check')"
            await conn.exec_driver_sql(integrity)  # raises if the index drifted from its rows
