"""A person's data end to end: export round trip, ``/forget-me`` in a chat, retention."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from sqlalchemy import select

from core.clock import ManualClock
from core.store.schema import messages, outbox, sessions
from gateway.features.people import ASK, DONE
from gateway.features.retention import RetentionFeature
from tests.direct_sql import DirectSql
from tests.gateway_server import running_gateway
from tests.test_cli import chatgate, cli_env

DAY = 86_400.0
T0 = 1_780_000_000.0


async def test_export_holds_what_show_lists_and_the_persons_files(home: Path) -> None:
    (home / "config.yaml").write_text("memory:\n  user_scope: per_user\n", encoding="utf-8")
    profile = home / "memories" / "users" / "webhook-alice.md"
    profile.parent.mkdir(parents=True)
    profile.write_text("Alice likes kayaking", encoding="utf-8")
    async with running_gateway(home) as gw:
        await gw.say("remember my harbourfront plans", chat_id="alice-dm", user_id="alice")

    shown = chatgate("people", "show", "webhook:alice", "--json", env=cli_env())
    archive = home / "alice.zip"
    wrote = chatgate("people", "export", "webhook:alice", str(archive), env=cli_env())

    assert wrote.returncode == 0, wrote.stderr
    with zipfile.ZipFile(archive) as zipped:
        exported = json.loads(zipped.read("person.json"))
        copied = zipped.read("files/user_profile/webhook-alice.md")
    assert exported == json.loads(shown.stdout)
    assert exported["areas"]["user_profile"] == [{"entry": "Alice likes kayaking"}]
    said = [m["content"] for m in exported["areas"]["messages"] if m["role"] == "user"]
    assert said == ["remember my harbourfront plans"]
    assert copied == profile.read_bytes()


async def test_forget_me_asks_then_forgets_and_tells_the_owners(home: Path) -> None:
    (home / "config.yaml").write_text("webhook:\n  owners: [boss]\n", encoding="utf-8")
    async with running_gateway(home) as gw:
        first = await gw.say("my wombatical secret", chat_id="alice-dm", user_id="alice")
        asked = await gw.say("/forget-me", chat_id="alice-dm", user_id="alice")
        done = await gw.say("/forget-me confirm", chat_id="alice-dm", user_id="alice")
        after = await gw.say("hello again", chat_id="alice-dm", user_id="alice")
        url = gw.settings.database_url

    assert asked.json()["replies"][0]["text"] == ASK
    assert done.json()["replies"][0]["text"] == DONE.format(messages=2, sessions=1)
    assert after.json()["session_id"] != first.json()["session_id"]  # a fresh session
    async with DirectSql(url) as sql:
        contents = [r.content for r in await sql.rows(select(messages.c.content))]
        old = await sql.rows(select(sessions).where(sessions.c.id == first.json()["session_id"]))
        told = await sql.rows(select(outbox.c.text).where(outbox.c.chat_id == "boss"))
    assert not any("wombatical" in (c or "") for c in contents)
    assert old == []
    assert [r.text for r in told] == [
        "Someone on webhook used /forget-me: their data was deleted (2 messages)."
    ]


async def test_a_cli_forgetting_drops_the_running_gateways_cached_transcript(home: Path) -> None:
    async with running_gateway(home) as gw:
        first = await gw.say("the pelicanish plan", chat_id="g1", user_id="alice")
        await gw.say("noted by bob", chat_id="g1", user_id="bob")
        done = chatgate("people", "forget", "webhook:alice", "--yes", env=cli_env())
        assert done.returncode == 0, done.stdout + done.stderr
        after = await gw.say("what was the plan?", chat_id="g1", user_id="bob")

    # Alice opened the shared session, so it ended ('forget'): Bob's next message starts
    # a fresh one instead of replaying a cached transcript that still held her words.
    assert after.json()["session_id"] != first.json()["session_id"]


async def test_retention_deletes_sessions_ended_long_enough_ago(home: Path) -> None:
    (home / "config.yaml").write_text("retention:\n  sessions_days: 30\n", encoding="utf-8")
    clock = ManualClock(T0)
    async with running_gateway(home, clock=clock) as gw:
        old = await gw.say("an old conversation about lighthouses", chat_id="c1")
        await gw.say("/new", chat_id="c1")
        clock.advance(20 * DAY)
        recent = await gw.say("a newer one about harbours", chat_id="c2")
        await gw.say("/new", chat_id="c2")
        active = await gw.say("still talking", chat_id="c3")
        retention = gw.gateway.feature(RetentionFeature).retention
        assert retention is not None
        assert "retention" in {job.id for job in gw.gateway.scheduler.jobs()}
        assert (await retention.check()).sessions == 0  # 20 days: nothing is old enough
        clock.advance(15 * DAY)
        pruned = await retention.check()
        url = gw.settings.database_url

    assert (pruned.sessions, pruned.messages) == (1, 2)
    async with DirectSql(url) as sql:
        left = {r.id for r in await sql.rows(select(sessions.c.id))}
    assert old.json()["session_id"] not in left
    assert {recent.json()["session_id"], active.json()["session_id"]} <= left
