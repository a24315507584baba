"""The whole gateway on PostgreSQL: the same webhook contract, durable across restarts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway
from tests.postgres import postgres_database


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    async with postgres_database() as url:
        yield url


async def test_conversation_survives_a_restart_on_postgres(
    home: Path, pg_url: str, fake_openai: FakeOpenAIServer
) -> None:
    env = fake_openai.gateway_env(CHATGATE_DATABASE_URL=pg_url)
    async with running_gateway(home, env) as gw:
        first = await gw.say("hello from postgres", message_id="m1")
        duplicate = await gw.say("hello from postgres", message_id="m1")
    async with running_gateway(home, env) as gw:
        second = await gw.say("still there?", message_id="m2")
        stored = await gw.gateway.db.history(second.json()["session_id"])

    assert first.status_code == second.status_code == 200
    assert first.json()["replies"] == [{"text": "echo: hello from postgres"}]
    assert duplicate.json() == first.json()
    assert second.json()["session_id"] == first.json()["session_id"]
    systems = [r["messages"][0] for r in fake_openai.requests]
    assert len(systems) == 2  # the duplicate ran no turn
    assert systems[0] == systems[1]  # the stored prompt bytes, reused after the restart
    assert [m.content for m in stored] == [
        "hello from postgres",
        "echo: hello from postgres",
        "still there?",
        "echo: still there?",
    ]
    # No SQLite file was made: PostgreSQL holds everything.
    assert not (home / "state.db").exists()


async def test_many_chats_at_once_on_postgres(home: Path, pg_url: str) -> None:
    async with running_gateway(home, {"CHATGATE_DATABASE_URL": pg_url}) as gw:
        responses = await asyncio.gather(
            *(gw.say(f"message {n}", chat_id=f"chat-{n}") for n in range(30))
        )
        new = await gw.say("/new", chat_id="chat-0")
        after = await gw.say("again", chat_id="chat-0")

    assert all(r.status_code == 200 for r in responses)
    for n, response in enumerate(responses):
        assert f'You said: "message {n}"' in response.json()["replies"][0]["text"]
    assert len({r.json()["session_id"] for r in responses}) == 30
    assert new.json()["session_id"] == responses[0].json()["session_id"]
    assert after.json()["session_id"] != responses[0].json()["session_id"]
