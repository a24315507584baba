"""Whom audit events concern is stored once (migration 0020): a chat's events across
turns and restarts share one ``audit_who`` row, everything that reads the ledger sees
the same platform, chat key, person and session as before, a forgotten person who
comes back is audited under their own id again, and existing ledgers convert both ways."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text

import core.store.audit as audit_module
from core.store.audit import AuditRecord, AuditStore
from core.store.db import SessionDB
from tests.direct_sql import DirectSql
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway
from tests.test_audit_e2e import audit_rows, one_turn
from tests.test_cli import chatgate, cli_env
from tests.test_reply_text_once import db_url, migrate  # noqa: F401  (db_url: the fixture)

T0 = 1_780_000_000.0
PSEUDONYM = "ab" * 32


async def who_rows(url: str) -> int:
    async with DirectSql(url) as sql:
        return int(await sql.scalar(text("SELECT count(*) FROM audit_who")))


async def say(gw: RunningGateway, fake: FakeOpenAIServer, number: int) -> None:
    fake.reply_text("noted")
    answer = await gw.say("hello", chat_id="alice-dm", user_id="alice", message_id=f"m{number}")
    assert answer.status_code == 200, answer.text


async def test_a_chat_is_stored_once_for_all_its_events_across_restarts(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await say(gw, fake_openai, 1)
        url = gw.settings.database_url
    first = await who_rows(url)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        for number in (2, 3):
            await say(gw, fake_openai, number)

    rows = await audit_rows(url)
    assert [r["event"] for r in rows].count("turn_finished") == 3
    assert {(r["person"], r["chat_key"], r["platform"]) for r in rows} == {
        ("webhook:alice", "webhook:alice-dm", "webhook")
    }
    # The first message is received before its session is known: two rows at most.
    assert first <= 2
    assert await who_rows(url) == first


async def test_a_forgotten_person_who_comes_back_is_audited_under_their_own_id(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await one_turn(gw, fake_openai, user_id="alice")
        url = gw.settings.database_url
    forgot = chatgate("people", "forget", "webhook:alice", "--yes", env=cli_env())
    assert forgot.returncode == 0, forgot.stderr
    before = len(await audit_rows(url))
    for number in (2, 3):  # each run's events a batch of their own
        async with running_gateway(home, fake_openai.gateway_env()) as gw:
            await say(gw, fake_openai, number)

    rows = await audit_rows(url)
    old, new = rows[:before], rows[before:]
    assert "webhook:alice" not in {r["person"] for r in old}
    assert {r["person"] for r in new} == {"webhook:alice"}
    shown = chatgate("people", "show", "webhook:alice", "--json", env=cli_env())
    listed = json.loads(shown.stdout)["areas"]["audit"]
    assert [r["id"] for r in listed] == [r["id"] for r in new]
    async with DirectSql(url) as sql:
        theirs = await sql.scalar(
            text("SELECT count(*) FROM audit_who WHERE person = 'webhook:alice'")
        )
    assert theirs <= 2  # stored once again, not once per batch


# -- the migration ----------------------------------------------------------------------------


# (event, session, chat key, person, platform) as revision 0019 stored them.
OLD_ROWS = [
    ("message_received", None, "webhook:c1", "webhook:alice", "webhook"),
    ("turn_started", "s1", "webhook:c1", "webhook:alice", "webhook"),
    ("turn_finished", "s1", "webhook:c1", "webhook:alice", "webhook"),
    ("pairing", None, None, "telegram:7", "telegram"),
    ("memory_write", None, None, None, None),
    ("person_forgotten", None, None, PSEUDONYM, "webhook"),
]
COLUMNS = ("event", "session_id", "chat_key", "person", "platform")


async def old_ledger(url: str) -> list[tuple[object, ...]]:
    async with DirectSql(url) as sql:
        rows = await sql.rows(text(f"SELECT {', '.join(COLUMNS)}, detail FROM audit ORDER BY id"))
    return [tuple(r) for r in rows]


async def test_an_existing_ledger_converts_up_and_back_down(db_url: str) -> None:  # noqa: F811
    await migrate(db_url, "0019")
    async with DirectSql(db_url) as sql, sql.begin() as conn:
        for number, row in enumerate(OLD_ROWS):
            await conn.execute(
                text(
                    "INSERT INTO audit (at, event, session_id, chat_key, person, platform, "
                    "detail) VALUES (:at, :event, :session_id, :chat_key, :person, :platform, "
                    "'{\"n\": 1}')"
                ),
                {"at": T0 + number, **dict(zip(COLUMNS, row, strict=True))},
            )
    before = await old_ledger(db_url)

    await migrate(db_url)
    async with SessionDB(db_url) as db:
        store: AuditStore = db.audit
        converted = await store.rows(limit=None)
        await store.append(
            [
                AuditRecord(
                    T0 + 10,
                    "turn_started",
                    session_id="s1",
                    chat_key="webhook:c1",
                    person="webhook:alice",
                    platform="webhook",
                ),
                AuditRecord(T0 + 11, "pairing", person=PSEUDONYM, platform="webhook"),
            ]
        )
        alice = await store.rows(person="webhook:alice", limit=None)
    whos = await who_rows(db_url)
    await migrate(db_url, "0019", down=True)
    after = await old_ledger(db_url)

    assert [
        (r.event, r.session_id, r.chat_key, r.person, r.platform) for r in converted
    ] == OLD_ROWS
    assert {r.detail["n"] for r in converted} == {1}
    # Four before (an event about nobody needs no row); alice's in her session is found
    # again, the pseudonym's is not (a forgotten person's rows have no digest): one more.
    assert whos == 5
    assert [r.event for r in alice] == [
        "message_received",
        "turn_started",
        "turn_finished",
        "turn_started",
    ]
    assert after[: len(before)] == before
    assert after[len(before) :] == [
        ("turn_started", "s1", "webhook:c1", "webhook:alice", "webhook", None),
        ("pairing", None, None, PSEUDONYM, "webhook", None),
    ]


# -- looking whom up, a batch at once ---------------------------------------------------------


def event_of(number: int, at: float) -> AuditRecord:
    return AuditRecord(
        at,
        "turn_started",
        session_id=f"s{number}",
        chat_key=f"webhook:c{number}",
        person=f"webhook:p{number}",
        platform="webhook",
    )


async def test_a_batch_about_many_people_files_each_event_under_its_own(
    db_url: str,  # noqa: F811
) -> None:
    await migrate(db_url)
    # 83 people: the lookups go 64, 8, 8 and 1 and 1 and 1 at a time.
    async with SessionDB(db_url) as db:
        await db.audit.append([event_of(n, T0 + n) for n in range(83)])
        await db.audit.append([event_of(n, T0 + 100 + n) for n in range(75, 90)])
        rows = await db.audit.rows(limit=None)

    assert [(r.person, r.chat_key, r.session_id) for r in rows] == [
        (f"webhook:p{n}", f"webhook:c{n}", f"s{n}") for n in [*range(83), *range(75, 90)]
    ]
    assert await who_rows(db_url) == 90  # the second batch found its first eight


async def test_two_people_whose_digests_clash_are_told_apart(
    db_url: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await migrate(db_url)
    # 64 bits of SHA-256 never clash in practice: make them, to see what a clash does.
    monkeypatch.setattr(audit_module, "who_digest", lambda key: 42)
    async with SessionDB(db_url) as db:
        await db.audit.append([event_of(1, T0), event_of(2, T0 + 1), event_of(1, T0 + 2)])
        await db.audit.append([event_of(2, T0 + 3), event_of(1, T0 + 4)])
        rows = await db.audit.rows(limit=None)

    assert [r.person for r in rows] == [f"webhook:p{n}" for n in (1, 2, 1, 2, 1)]
    # The first keeps the digest and is found again; the other gets a row per batch.
    assert await who_rows(db_url) == 3
