"""An external memory provider through the whole gateway: recall for this turn only."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from core.store.schema import messages
from tests.direct_sql import read_rows
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import notes_stored, running_gateway

NOTES = "memory:\n  provider: notes\n"


async def test_recall_reaches_the_model_but_not_the_transcript(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text(NOTES, encoding="utf-8")
    env = fake_openai.gateway_env()
    async with running_gateway(home, env) as gw:
        await gw.say("my cat is called Miso")
        await notes_stored(home, 1)
        await gw.say("/new")
        asked = await gw.say("what is my cat called?")
        session_id = asked.json()["session_id"]
    async with running_gateway(home, env) as gw:
        await gw.say("thanks")  # after a restart the history replays the exact bytes sent
        rows = await read_rows(
            gw.settings.database_url,
            select(messages.c.content, messages.c.api_content).where(
                messages.c.session_id == session_id, messages.c.role == "user"
            ),
        )

    sent = fake_openai.requests[1]["messages"][-1]["content"]
    assert sent.startswith("what is my cat called?")
    assert "<memory-context>" in sent
    assert "Miso" in sent
    first_user = rows[0]
    assert first_user.content == "what is my cat called?"  # the transcript keeps the user's words
    assert first_user.api_content == sent  # the sidecar keeps the bytes sent
    replayed = [m for m in fake_openai.requests[2]["messages"] if m["role"] == "user"]
    assert replayed[0]["content"] == sent


async def test_recall_is_kept_per_person(home: Path, fake_openai: FakeOpenAIServer) -> None:
    (home / "config.yaml").write_text(NOTES, encoding="utf-8")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("my cat is called Miso", user_id="alice")
        await notes_stored(home, 1)
        await gw.say("what is my cat called?", chat_id="c2", user_id="bob")

    assert "<memory-context>" not in fake_openai.requests[1]["messages"][-1]["content"]
