"""``chatgate people forget``: one person's words leave every store, the others' stay.

Alice and Bob each talk to the bot directly and both talk in one shared webhook chat
(one session for the chat). The offline model echoes what it is told, so the replies
to Alice quote her too: forgetting her must take her whole turns. Then her words are
looked for everywhere a person could find them: the messages table, the FTS5 and
trigram indexes (or PostgreSQL's tsvector), the search the agent uses, the notes
provider, and on SQLite the raw bytes of state.db.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from sqlalchemy import select, text

from core.store.db import SessionDB
from core.store.schema import messages, prompts, sessions
from core.store.search.matches import SearchScope
from tests.direct_sql import DirectSql
from tests.gateway_server import notes_stored, running_gateway
from tests.test_cli import chatgate, cli_env

NOTES = "memory:\n  provider: notes\n"
# Words only Alice writes; the CJK one is indexed by the trigram table on SQLite.
ALICE_DM = "my zebrafluxword is a secret"
ALICE_GROUP = "group note about xylophonicity"
ALICE_CJK = "秘密猫咪藏在这里"
BOB_DM = "bob keeps quokkamarble here"
BOB_GROUP = "bob answers with marmaladeish"
EVERYWHERE = SearchScope(platform="", chat_id="", thread_id=None, user_id="", mode="all")


async def _converse(home: Path, env: dict[str, str]) -> str:
    """The four people's-worth of chat; returns the shared chat's session id."""
    (home / "config.yaml").write_text(NOTES, encoding="utf-8")
    async with running_gateway(home, env) as gw:
        await gw.say(ALICE_DM, chat_id="alice-dm", user_id="alice")
        await gw.say(BOB_DM, chat_id="bob-dm", user_id="bob")
        shared = await gw.say(ALICE_GROUP, chat_id="g1", user_id="alice")
        await gw.say(BOB_GROUP, chat_id="g1", user_id="bob")
        await gw.say(ALICE_CJK, chat_id="g1", user_id="alice")
        await notes_stored(home, 5)
        return str(shared.json()["session_id"])


async def _search(url: str, word: str) -> int:
    async with SessionDB(url) as db, db.search.reading() as reader:
        return len(await reader.find_messages(word, EVERYWHERE))


async def test_forget_takes_one_persons_words_everywhere(
    home: Path, database_env: dict[str, str]
) -> None:
    group_id = await _converse(home, database_env)
    env = cli_env(**database_env)
    url = database_env.get("CHATGATE_DATABASE_URL") or f"sqlite:///{home / 'state.db'}"
    assert await _search(url, "xylophonicity") > 0  # findable before

    shown = chatgate("people", "show", "webhook:alice", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    counts = json.loads(shown.stdout)["counts"]
    assert (counts["sessions"], counts["notes"], counts["inbox"]) == (2, 3, 3)

    done = chatgate("people", "forget", "webhook:alice", "--yes", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verified" in done.stdout

    for word in ("zebrafluxword", "xylophonicity"):
        assert await _search(url, word) == 0
    # Bob's words stay searchable (his message and the echo of it).
    assert await _search(url, "marmaladeish") == 2
    assert await _search(url, "quokkamarble") == 2
    async with DirectSql(url) as sql:
        rows = await sql.rows(select(messages.c.content, messages.c.role, messages.c.session_id))
        left = " ".join(r.content or "" for r in rows)
        group = await sql.rows(select(sessions).where(sessions.c.id == group_id))
        kept_prompts = {r.hash for r in await sql.rows(select(prompts.c.hash))}
        used = await sql.rows(select(sessions.c.prompt_hash, sessions.c.tools_hash))
        await _index_is_clean(sql, url)
    for gone in ("zebraflux", "xylophonic", "秘密"):
        assert gone not in left
    for kept in ("quokkamarble", "marmaladeish"):
        assert kept in left
    shared = [r for r in rows if r.session_id == group_id]
    assert [r.role for r in shared] == ["user", "assistant"]  # Bob's whole turn, valid
    assert group[0].end_reason == "forget"  # Alice opened it: her prompt snapshot goes
    assert group[0].prompt_hash is None
    # No stored prompt outlives the sessions that used it.
    assert kept_prompts == {h for r in used for h in r if h is not None}
    with sqlite3.connect(home / "memory_provider" / "notes.sqlite3") as notes:
        owners = [r[0] for r in notes.execute("SELECT owner FROM exchanges")]
    assert owners == ["webhook:bob", "webhook:bob"]  # each filed under its author
    again = chatgate("people", "show", "webhook:alice", "--json", env=env)
    assert sum(json.loads(again.stdout)["counts"].values()) == 0
    if not database_env:
        raw = (home / "state.db").read_bytes()
        for needle in (b"zebrafluxword", b"xylophonicity", ALICE_CJK.encode()):
            assert needle not in raw
        assert b"marmaladeish" in raw
        notes_raw = (home / "memory_provider" / "notes.sqlite3").read_bytes()
        assert b"zebrafluxword" not in notes_raw


async def _index_is_clean(sql: DirectSql, url: str) -> None:
    async with sql.connect() as conn:
        if url.startswith("sqlite"):
            fts = "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'xylophonicity'"
            trigram = "SELECT count(*) FROM messages_trigram WHERE messages_trigram MATCH '猫咪藏'"
            assert (await conn.execute(text(fts))).scalar_one() == 0
            assert (await conn.execute(text(trigram))).scalar_one() == 0
        else:
            tsv = (
                "SELECT count(*) FROM messages "
                "WHERE content_tsv @@ plainto_tsquery('simple', 'xylophonicity')"
            )
            assert (await conn.execute(text(tsv))).scalar_one() == 0
