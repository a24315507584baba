"""``chatgate sessions search`` and ``sessions show --lineage``, run as the real console script."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import insert, update

from core.store.db import SessionDB
from core.store.engine import create_engines
from core.store.records import SessionRow
from core.store.schema import messages, sessions
from gateway.config import load_settings
from tests.direct_sql import DirectSql
from tests.test_cli import chatgate, session_ids

T0 = 1_780_000_000.0  # 2026-05-28 20:26:40 UTC


def seeded(home: Path, *chains: Sequence[tuple[str, list[str]]]) -> None:
    """Write sessions straight into the home's SessionDB; each chain is a compaction
    lineage, every session but a chain's last ended by compaction."""
    asyncio.run(_seed(load_settings(home, {}).database_url, chains))


async def _seed(url: str, chains: Sequence[Sequence[tuple[str, list[str]]]]) -> None:
    from migrations.runner import upgrade

    engines = create_engines(url)
    try:
        await upgrade(engines.write)
    finally:
        await engines.dispose()
    async with SessionDB(url) as db, DirectSql(url) as tables:
        at = 0.0
        for chain in chains:
            parent = None
            for index, (session_id, texts) in enumerate(chain):
                at += 100
                await db.open_session(_row(session_id, at))
                await _say(tables, session_id, texts, at)
                if parent is not None:
                    await _set(tables, session_id, parent_session_id=parent)
                if index < len(chain) - 1:
                    await _set(tables, session_id, ended_at=T0 + at + 50, end_reason="compaction")
                parent = session_id


def _row(session_id: str, at: float) -> SessionRow:
    return SessionRow(
        id=session_id,
        session_key=f"webhook:c1:{session_id}",
        platform="webhook",
        chat_id="c1",
        user_id="u1",
        started_at=T0 + at,
        last_active_at=T0 + at,
        provider="offline",
        model="offline",
        system_prompt="system",
    )


async def _say(tables: DirectSql, session_id: str, texts: list[str], at: float) -> None:
    async with tables.begin() as conn:
        for n, content in enumerate(texts):
            role = "user" if n % 2 == 0 else "assistant"
            await conn.execute(
                insert(messages).values(
                    session_id=session_id, role=role, content=content, created_at=T0 + at + n
                )
            )


async def _set(tables: DirectSql, session_id: str, **values: object) -> None:
    async with tables.begin() as conn:
        await conn.execute(update(sessions).where(sessions.c.id == session_id).values(values))


def lines_with(output: str, needle: str) -> list[str]:
    return [line for line in output.splitlines() if needle in line]


# -- search ---------------------------------------------------------------------------


def test_search_finds_a_chat_message_and_prints_its_session(home: Path) -> None:
    talk = chatgate("chat", stdin="the quokka escaped again\n/status\n")
    [session_id] = session_ids(talk.stdout)

    found = chatgate("sessions", "search", "quokka")

    assert found.returncode == 0, found.stderr
    [user_line] = [line for line in lines_with(found.stdout, session_id) if " user " in line]
    assert "the quokka escaped again" in user_line
    assert "Traceback" not in found.stderr


def test_search_with_chat_only_reads_that_chat(home: Path) -> None:
    ours = chatgate("chat", "--chat-id", "ours", stdin="pelican budget review\n/status\n")
    theirs = chatgate("chat", "--chat-id", "theirs", stdin="pelican lunch plans\n/status\n")
    [our_id] = session_ids(ours.stdout)
    [their_id] = session_ids(theirs.stdout)

    everywhere = chatgate("sessions", "search", "pelican")
    narrowed = chatgate("sessions", "search", "pelican", "--chat", "terminal:ours")
    elsewhere = chatgate("sessions", "search", "pelican", "--chat", "terminal:nobody")

    assert our_id in everywhere.stdout
    assert their_id in everywhere.stdout
    assert narrowed.returncode == 0, narrowed.stderr
    assert our_id in narrowed.stdout
    assert their_id not in narrowed.stdout
    assert "lunch" not in narrowed.stdout
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert "no messages match 'pelican' in terminal:nobody" in elsewhere.stdout


def test_search_snippet_is_one_line_around_the_match(home: Path) -> None:
    before = " ".join(f"before{n}" for n in range(60))
    after = " ".join(f"after{n}" for n in range(60))
    seeded(home, [("long", [f"{before}\nthe narwhal\nappears here {after}"])])

    found = chatgate("sessions", "search", "narwhal", "--limit", "1")

    [row] = lines_with(found.stdout, "long")
    assert "narwhal appears here" in row  # newlines folded into the line
    assert "before0 " not in row  # the start of the message is cut away…
    assert "…" in row  # …and the cut is marked


def test_search_without_matches_says_so(home: Path) -> None:
    chatgate("chat", stdin="hello\n")

    result = chatgate("sessions", "search", "xylophone")

    assert result.returncode == 0, result.stderr
    assert "no messages match 'xylophone'" in result.stdout


def test_bad_chat_or_lonely_user_exits_2_with_one_line(home: Path) -> None:
    for args in (("--chat", "nocolon"), ("--chat", "terminal:"), ("--user", "u1")):
        result = chatgate("sessions", "search", "anything", *args)

        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr


# -- show --lineage ---------------------------------------------------------------------


def test_lineage_prints_root_to_children_with_end_reason(home: Path) -> None:
    seeded(
        home,
        [("root1", ["a", "b", "c"]), ("mid1", ["d", "e"]), ("leaf1", ["f"])],
        [("unrelated", ["x"])],
    )

    shown = chatgate("sessions", "show", "mid1", "--lineage")

    assert shown.returncode == 0, shown.stderr
    assert "end_reason: compaction" in shown.stdout  # the existing output is still there
    table = shown.stdout[shown.stdout.index("lineage") : shown.stdout.index("system prompt:")]
    order = [table.index(sid) for sid in ("root1", "mid1 (shown)", "leaf1")]
    assert order == sorted(order)
    [root] = lines_with(table, "root1")
    assert "compaction" in root
    assert " 3 " in root + " "  # message count
    [leaf] = lines_with(table, "leaf1")
    assert "compaction" not in leaf
    assert "unrelated" not in table


def test_lineage_of_the_root_lists_every_descendant(home: Path) -> None:
    seeded(home, [("root1", ["a"]), ("mid1", ["b"]), ("leaf1", ["c"])])

    shown = chatgate("sessions", "show", "root1", "--lineage")

    assert shown.returncode == 0, shown.stderr
    assert "root1 (shown)" in shown.stdout
    # Each generation is indented one step further.
    assert "│   mid1 " in shown.stdout
    assert "│     leaf1 " in shown.stdout


def test_show_without_lineage_prints_no_table_and_unknown_id_exits_1(home: Path) -> None:
    seeded(home, [("root1", ["a"]), ("mid1", ["b"])])

    plain = chatgate("sessions", "show", "mid1")
    unknown = chatgate("sessions", "show", "nope", "--lineage")

    assert plain.returncode == 0, plain.stderr
    assert "root1" in plain.stdout  # as parent_session_id
    assert "(shown)" not in plain.stdout
    assert unknown.returncode == 1
    assert "no session nope" in unknown.stderr
