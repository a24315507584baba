"""``chatgate audit`` and the audit in ``chatgate people``, run as a user runs them."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from core.audit.salt import salt_path
from core.people.person import Person
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway
from tests.postgres import postgres_database
from tests.test_audit_e2e import audit_rows, one_turn
from tests.test_cli import chatgate, cli_env


async def audited_turn(home: Path, fake: FakeOpenAIServer, user_id: str = "u1") -> str:
    async with running_gateway(home, fake.gateway_env()) as gw:
        await one_turn(gw, fake, user_id=user_id)
        return gw.settings.database_url


async def test_list_prints_the_newest_events(home: Path, fake_openai: FakeOpenAIServer) -> None:
    await audited_turn(home, fake_openai)

    listed = chatgate("audit", "list", "--limit", "2", "--json", env=cli_env())

    assert listed.returncode == 0, listed.stderr
    assert [e["event"] for e in json.loads(listed.stdout)] == [
        "delivery_queued",
        "delivery_delivered",
    ]


async def test_list_filters_by_event(home: Path, fake_openai: FakeOpenAIServer) -> None:
    await audited_turn(home, fake_openai)

    listed = chatgate("audit", "list", "--event", "tool_call", env=cli_env())

    assert listed.returncode == 0, listed.stderr
    assert "tool_call" in listed.stdout
    assert "model_call" not in listed.stdout


async def test_since_a_later_date_lists_nothing(home: Path, fake_openai: FakeOpenAIServer) -> None:
    await audited_turn(home, fake_openai)

    listed = chatgate("audit", "list", "--since", "2999-01-01", "--json", env=cli_env())

    assert json.loads(listed.stdout) == []


def test_since_that_is_no_date_is_a_usage_error(home: Path) -> None:
    listed = chatgate("audit", "list", "--since", "last tuesday", env=cli_env())

    assert listed.returncode == 2
    assert "not a date" in listed.stderr


async def test_summary_counts_events_by_kind(home: Path, fake_openai: FakeOpenAIServer) -> None:
    await audited_turn(home, fake_openai)

    summed = chatgate("audit", "summary", "--json", env=cli_env())

    assert summed.returncode == 0, summed.stderr
    assert json.loads(summed.stdout)["events"] == {
        "message_received": 1,
        "turn_started": 1,
        "model_call": 2,
        "memory_write": 1,
        "tool_call": 1,
        "turn_finished": 1,
        "delivery_queued": 1,
        "delivery_delivered": 1,
    }


async def test_export_writes_every_event_as_json_lines(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    url = await audited_turn(home, fake_openai)
    target = home / "audit.jsonl"

    wrote = chatgate("audit", "export", "--jsonl", str(target), env=cli_env())
    printed = chatgate("audit", "export", "--jsonl", env=cli_env())

    assert wrote.returncode == 0, wrote.stderr
    lines = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert [e["id"] for e in lines] == [r["id"] for r in await audit_rows(url)]
    assert printed.stdout == target.read_text(encoding="utf-8")


def test_export_without_a_format_is_a_usage_error(home: Path) -> None:
    done = chatgate("audit", "export", env=cli_env())

    assert done.returncode == 2


async def test_people_show_lists_their_audit_rows(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    await audited_turn(home, fake_openai, user_id="alice")

    shown = chatgate("people", "show", "webhook:alice", "--json", env=cli_env())

    events = [r["event"] for r in json.loads(shown.stdout)["areas"]["audit"]]
    assert events[:2] == ["message_received", "turn_started"]


async def test_forget_pseudonymises_their_audit_rows(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    url = await audited_turn(home, fake_openai, user_id="alice")
    before = len(await audit_rows(url))

    done = chatgate("people", "forget", "webhook:alice", "--yes", env=cli_env())

    assert done.returncode == 0, done.stdout + done.stderr
    rows = await audit_rows(url)
    assert len(rows) == before + 1  # kept, plus one person_forgotten
    assert [r for r in rows if "alice" in f"{r['person']} {r['chat_key']}"] == []


async def test_forget_records_one_event_under_the_salted_hash(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    url = await audited_turn(home, fake_openai, user_id="alice")

    chatgate("people", "forget", "webhook:alice", "--yes", env=cli_env())

    salt = bytes.fromhex(salt_path(home).read_text().strip())
    pseudonym = Person("webhook", "alice").pseudonym(salt)
    forgotten = [r for r in await audit_rows(url) if r["event"] == "person_forgotten"]
    assert [r["person"] for r in forgotten] == [pseudonym]
    assert {r["person"] for r in await audit_rows(url)} == {pseudonym}


async def test_the_salt_is_a_secret_file(home: Path, fake_openai: FakeOpenAIServer) -> None:
    await audited_turn(home, fake_openai, user_id="alice")

    chatgate("people", "forget", "webhook:alice", "--yes", env=cli_env())

    mode = stat.S_IMODE(os.stat(salt_path(home)).st_mode)
    assert mode == 0o600


async def test_forget_pseudonymises_on_postgresql(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with postgres_database() as pg_url:
        env = fake_openai.gateway_env(CHATGATE_DATABASE_URL=pg_url)
        async with running_gateway(home, env) as gw:
            await one_turn(gw, fake_openai, user_id="alice")
        shown = chatgate("people", "show", "webhook:alice", "--json", env=cli_env(**env))
        done = chatgate("people", "forget", "webhook:alice", "--yes", env=cli_env(**env))
        rows = await audit_rows(pg_url)

    assert done.returncode == 0, done.stdout + done.stderr
    assert len(json.loads(shown.stdout)["areas"]["audit"]) == len(rows) - 1
    assert [r for r in rows if "alice" in f"{r['person']} {r['chat_key']}"] == []
