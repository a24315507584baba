"""`session_search` against a real migrated SQLite SessionDB: modes, caps and privacy scope."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, update

from core.search.tool import SESSION_SEARCH_SPEC, SessionSearchTool
from core.store.db import SessionDB
from core.store.engine import create_engines
from core.store.records import SessionRow
from core.store.schema import messages, sessions
from core.tools import ToolContext
from migrations.runner import upgrade
from tests.direct_sql import DirectSql

T0 = 1_780_000_000.0

# Caller u1 in group chat c1 on webhook; u2 is someone else.
ALICE = ToolContext(
    session_id="cur", session_key="webhook:c1", platform="webhook", chat_id="c1", user_id="u1"
)
ALICE_IN_THREAD = ToolContext(
    session_id="thr", session_key="webhook:c1:th1", platform="webhook", chat_id="c1", user_id="u1"
)
BOB_DM = ToolContext(
    session_id="dm_u2", session_key="webhook:u2", platform="webhook", chat_id="u2", user_id="u2"
)


def row(
    session_id: str,
    *,
    platform: str = "webhook",
    chat_id: str = "c1",
    user_id: str = "u1",
    thread_id: str | None = None,
    parent: str | None = None,
    ended: bool = True,
    at: float = 0.0,
) -> SessionRow:
    return SessionRow(
        id=session_id,
        session_key=f"{platform}:{chat_id}:{thread_id}:{session_id}",
        platform=platform,
        chat_id=chat_id,
        thread_id=thread_id,
        user_id=user_id,
        parent_session_id=parent,
        started_at=T0 + at,
        last_active_at=T0 + at,
        ended_at=T0 + at + 50 if ended else None,
        end_reason="compaction" if ended else None,
        provider="offline",
        model="offline",
        system_prompt="system",
    )


class World:
    """A migrated database with a few chats, and a way to add transcripts."""

    def __init__(self, db: SessionDB, tables: DirectSql) -> None:
        self.db = db
        self.tables = tables
        self.ids: dict[str, list[int]] = {}

    async def session(self, new: SessionRow, texts: Sequence[str] = ()) -> list[int]:
        await self.db.open_session(replace(new, ended_at=None, end_reason=None))
        ids = await self.say(new.id, texts)
        if new.ended_at is not None:
            await self.update(new.id, ended_at=new.ended_at, end_reason=new.end_reason)
        return ids

    async def update(self, session_id: str, **values: Any) -> None:
        async with self.tables.begin() as conn:
            await conn.execute(update(sessions).where(sessions.c.id == session_id).values(values))

    async def say(self, session_id: str, texts: Sequence[str]) -> list[int]:
        ids = self.ids.setdefault(session_id, [])
        async with self.tables.begin() as conn:
            for n, content in enumerate(texts):
                result = await conn.execute(
                    insert(messages).values(
                        session_id=session_id,
                        role="user" if n % 2 == 0 else "assistant",
                        content=content,
                        created_at=T0 + len(ids),
                    )
                )
                assert result.inserted_primary_key is not None
                ids.append(int(result.inserted_primary_key[0]))
        return ids

    def tool(
        self, *, allow_global: bool = False, owners: tuple[str, ...] = ()
    ) -> SessionSearchTool:
        return SessionSearchTool(self.db.search, allow_global=allow_global, owners=owners)


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    engines = create_engines(url)
    try:
        await upgrade(engines.write)
    finally:
        await engines.dispose()
    async with SessionDB(url) as db, DirectSql(url) as tables:
        w = World(db, tables)
        await w.session(row("root", at=1), ["deploy the parser", "ok"])
        await w.update("root", title="Deploy plan")
        await w.session(row("mid", parent="root", at=2), ["parser deploy failed", "retrying"])
        await w.session(row("cur", parent="mid", ended=False, at=3), ["where were we", "here"])
        await w.session(row("other", at=4), ["lunch order", "pizza"])
        await w.session(row("thr", thread_id="th1", ended=False, at=5), ["thread talk", "yes"])
        await w.session(row("c2s", chat_id="c2", user_id="u2", at=6), ["secret of c2", "hush"])
        await w.session(row("dm_u1", chat_id="u1", at=7), ["my own dm", "noted"])
        # The same user id on another platform may be another person: never in scope.
        await w.session(
            row("tg_u1", platform="telegram", chat_id="u1", at=7.5), ["telegram u1", "other"]
        )
        await w.session(row("dm_u2", chat_id="u2", user_id="u2", ended=False, at=8), ["bob", "hi"])
        yield w


async def call(tool: SessionSearchTool, ctx: ToolContext = ALICE, **args: Any) -> dict[str, Any]:
    payload = json.loads(await tool.call(args, ctx))
    assert isinstance(payload, dict)
    return payload


def contents(items: Sequence[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in items]


# -- the spec -------------------------------------------------------------------------------


def test_spec_names_every_argument() -> None:
    assert SESSION_SEARCH_SPEC.name == "session_search"
    props = SESSION_SEARCH_SPEC.parameters["properties"]
    assert set(props) == {
        "query", "session_id", "around_message_id", "window", "limit", "detail", "scope"
    }  # fmt: skip
    assert props["window"]["maximum"] == 20
    assert props["limit"]["maximum"] == 10


# -- browse ---------------------------------------------------------------------------------


async def test_browse_lists_recent_sessions_of_this_chat_only(world: World) -> None:
    listed = await call(world.tool())

    assert listed["success"] is True
    assert listed["mode"] == "browse"
    ids = [s["session_id"] for s in listed["sessions"]]
    assert ids == ["thr", "other", "cur", "mid", "root"]
    by_id = {s["session_id"]: s for s in listed["sessions"]}
    assert by_id["root"]["title"] == "Deploy plan"
    assert by_id["other"]["title"] == "lunch order"  # no title: the first user message
    assert by_id["other"]["preview"] == "lunch order"
    assert by_id["other"]["message_count"] == 2
    assert by_id["cur"]["current"] is True
    assert by_id["mid"]["parent_session_id"] == "root"
    assert by_id["mid"]["started_at"].startswith("2026-")


async def test_browse_limit(world: World) -> None:
    listed = await call(world.tool(), limit=2)
    assert [s["session_id"] for s in listed["sessions"]] == ["thr", "other"]


async def test_browse_in_a_thread_sees_only_the_thread(world: World) -> None:
    listed = await call(world.tool(), ALICE_IN_THREAD)
    assert [s["session_id"] for s in listed["sessions"]] == ["thr"]


async def test_browse_user_scope_adds_own_direct_chats_on_this_platform(world: World) -> None:
    listed = await call(world.tool(), scope="user")
    ids = {s["session_id"] for s in listed["sessions"]}
    assert ids == {"root", "mid", "cur", "other", "thr", "dm_u1"}


# -- read -----------------------------------------------------------------------------------


async def test_read_returns_the_whole_small_session(world: World) -> None:
    read = await call(world.tool(), session_id="mid")

    assert read["success"] is True
    assert read["mode"] == "read"
    assert read["session_id"] == "mid"
    assert read["message_count"] == 2
    assert contents(read["messages"]) == ["parser deploy failed", "retrying"]
    assert [m["role"] for m in read["messages"]] == ["user", "assistant"]
    assert "omitted" not in read


async def test_read_a_large_session_gives_head_and_tail(world: World) -> None:
    await world.session(row("big", at=9), [f"line {n}" for n in range(35)])

    read = await call(world.tool(), session_id="big")

    assert read["message_count"] == 35
    assert contents(read["messages"]) == [f"line {n}" for n in range(20)]
    assert contents(read["last_messages"]) == [f"line {n}" for n in range(25, 35)]
    assert read["omitted"].startswith("5 messages omitted")


async def test_read_of_exactly_thirty_messages_is_whole(world: World) -> None:
    await world.session(row("thirty", at=9), [f"line {n}" for n in range(30)])
    read = await call(world.tool(), session_id="thirty")
    assert len(read["messages"]) == 30
    assert "omitted" not in read


async def test_long_messages_are_cut_and_say_so(world: World) -> None:
    await world.session(row("long", at=9), ["x" * 5_000, "short"])

    read = await call(world.tool(), session_id="long")

    first, second = read["messages"]
    assert len(first["content"]) == 4_000
    assert first["truncated"] == "cut at 4000 of 5000 chars"
    assert "truncated" not in second


# -- scroll ---------------------------------------------------------------------------------


async def test_scroll_returns_a_window_around_the_message(world: World) -> None:
    ids = await world.session(row("big", at=9), [f"line {n}" for n in range(30)])

    scrolled = await call(world.tool(), session_id="big", around_message_id=ids[10], window=2)

    assert scrolled["mode"] == "scroll"
    assert contents(scrolled["window"]) == [f"line {n}" for n in range(8, 13)]
    anchors = [m["message_id"] for m in scrolled["window"] if m.get("anchor")]
    assert anchors == [ids[10]]


async def test_scroll_near_the_edge_and_default_window(world: World) -> None:
    ids = await world.session(row("big", at=9), [f"line {n}" for n in range(30)])

    scrolled = await call(world.tool(), session_id="big", around_message_id=ids[1])

    assert contents(scrolled["window"]) == [f"line {n}" for n in range(7)]


async def test_scroll_to_a_message_of_another_session_is_refused(world: World) -> None:
    other_ids = world.ids["other"]
    scrolled = await call(world.tool(), session_id="mid", around_message_id=other_ids[0])
    assert scrolled["success"] is False
    assert "not in session 'mid'" in scrolled["error"] or "not in session mid" in scrolled["error"]


# -- privacy --------------------------------------------------------------------------------


async def refusal(tool: SessionSearchTool, session_id: str, **args: Any) -> str:
    payload = await call(tool, session_id=session_id, **args)
    assert payload["success"] is False
    error = payload["error"]
    assert isinstance(error, str)
    return error.replace(session_id, "<id>")


async def test_another_chat_looks_exactly_like_a_missing_session(world: World) -> None:
    tool = world.tool()
    missing = await refusal(tool, "no-such-session")

    assert await refusal(tool, "c2s") == missing
    assert await refusal(tool, "c2s", around_message_id=world.ids["c2s"][0]) == missing
    missing_for_user = await refusal(tool, "no-such-session", scope="user")
    assert await refusal(tool, "dm_u2", scope="user") == missing_for_user


async def test_other_person_cannot_read_my_chat(world: World) -> None:
    tool = world.tool()
    assert (await call(tool, BOB_DM, session_id="cur", scope="user"))["success"] is False
    listed = await call(tool, BOB_DM, scope="user")
    assert [s["session_id"] for s in listed["sessions"]] == ["dm_u2"]


async def test_own_direct_chat_needs_user_scope(world: World) -> None:
    tool = world.tool()
    assert (await call(tool, session_id="dm_u1"))["success"] is False
    read = await call(tool, session_id="dm_u1", scope="user")
    assert contents(read["messages"]) == ["my own dm", "noted"]
    assert (await call(tool, session_id="tg_u1", scope="user"))["success"] is False


async def test_a_thread_caller_cannot_read_the_rest_of_the_chat(world: World) -> None:
    read = await call(world.tool(), ALICE_IN_THREAD, session_id="other")
    assert read["success"] is False


async def test_scope_all_needs_allow_global(world: World) -> None:
    refused = await call(world.tool(), session_id="c2s", scope="all")
    assert refused["success"] is False
    assert "scope='all'" in refused["error"]

    read = await call(world.tool(allow_global=True), session_id="c2s", scope="all")
    assert contents(read["messages"]) == ["secret of c2", "hush"]
    # allow_global does not widen the default scope.
    assert (await call(world.tool(allow_global=True), session_id="c2s"))["success"] is False


async def test_an_owner_may_search_all_and_nobody_else(world: World) -> None:
    tool = world.tool(owners=("webhook:u1",))
    read = await call(tool, session_id="c2s", scope="all")
    assert contents(read["messages"]) == ["secret of c2", "hush"]
    assert (await call(tool, BOB_DM, session_id="c2s", scope="all"))["success"] is False


# -- bad arguments --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        {"window": 0},
        {"window": 21},
        {"window": "wide"},
        {"window": True},
        {"limit": 11},
        {"limit": 2.5},
        {"detail": "everything"},
        {"scope": "world"},
        {"scope": ["chat"]},
        {"query": 42},
        {"session_id": {"id": 1}},
        {"around_message_id": 3},
        {"query": "x", "session_id": "mid"},
        {"query": "x" * 2_049},
        {"colour": "red"},
    ],
)
async def test_bad_arguments_are_errors_not_exceptions(world: World, args: dict[str, Any]) -> None:
    payload = json.loads(await world.tool().call(args, ALICE))
    assert payload["success"] is False
    assert payload["error"]


async def test_numeric_strings_are_accepted(world: World) -> None:
    ids = world.ids["mid"]
    scrolled = await call(world.tool(), session_id="mid", around_message_id=str(ids[0]), window="1")
    assert scrolled["success"] is True


async def test_unknown_current_session_is_refused(world: World) -> None:
    ghost = ToolContext(
        session_id="ghost", session_key="k", platform="webhook", chat_id="c1", user_id="u1"
    )
    payload = await call(world.tool(), ghost)
    assert payload["success"] is False


# -- discovery (uses core.store.search.matches) ---------------------------------------------


async def test_discovery_one_hit_per_lineage_and_current_session_skipped(world: World) -> None:
    await world.say("cur", ["the parser again"])

    found = await call(world.tool(), query="parser", detail="full")

    assert found["success"] is True
    assert found["mode"] == "discovery"
    hits = found["results"]
    # root and mid are one lineage (mid continues root); cur is in the live context.
    assert len(hits) == 1
    assert hits[0]["session_id"] in {"root", "mid"}
    window = hits[0]["window"]
    assert [m["message_id"] for m in window if m.get("anchor")] == [hits[0]["match_message_id"]]


async def test_discovery_adaptive_hydrates_only_the_top_hit(world: World) -> None:
    for n, chat in enumerate(("other", "root")):
        await world.say(chat, [f"zebra story {n}", "ok"])

    adaptive = (await call(world.tool(), query="zebra"))["results"]
    full = (await call(world.tool(), query="zebra", detail="full"))["results"]

    assert len(adaptive) == len(full) == 2
    assert "window" in adaptive[0]
    assert "bookends" in adaptive[0]
    assert "window" not in adaptive[1]
    assert adaptive[1]["anchor"]["message_id"] == adaptive[1]["match_message_id"]
    assert all("window" in hit for hit in full)


async def test_discovery_caps_bookends_and_respects_scope(world: World) -> None:
    await world.session(
        row("long", at=9), ["b" * 2_000, "intro", "mid", "walrus here", *["pad"] * 10, "c" * 2_000]
    )

    hit = (await call(world.tool(), query="walrus", window=1))["results"][0]

    assert len(hit["window"]) == 3
    first = hit["bookends"]["first"]
    assert len(first[0]["content"]) == 1_200
    assert "truncated" in first[0]
    assert len(hit["bookends"]["last"][-1]["content"]) == 1_200
    assert (await call(world.tool(), query="secret"))["results"] == []
    everywhere = await call(world.tool(allow_global=True), query="secret", scope="all")
    assert [h["session_id"] for h in everywhere["results"]] == ["c2s"]
