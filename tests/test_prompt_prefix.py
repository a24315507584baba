"""The request prefix never changes within a session: memory writes, recall, restarts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, notes_stored, running_gateway

CONFIG = "memory:\n  provider: notes\n"


async def turn(gw: RunningGateway, fake: FakeOpenAIServer, n: int) -> None:
    if n in (2, 6):  # memory writes mid-session change disk, never this prompt
        fact = f"Fact number {n} about the user"
        fake.reply_tool_call("memory", {"target": "user", "action": "add", "content": fact})
        fake.reply_text(f"Saved fact {n}.")
    response = await gw.say(f"turn {n}: tell me about the zeppelin project")
    assert response.status_code == 200


def assert_prefix_stable(requests: list[dict[str, Any]]) -> None:
    systems = {r["messages"][0]["content"] for r in requests}
    assert len(systems) == 1, "the system prompt changed within the session"
    for before, after in zip(requests, requests[1:], strict=False):
        assert after["messages"][: len(before["messages"])] == before["messages"]


async def test_ten_turns_with_memory_recall_and_a_restart_keep_one_prefix(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text(CONFIG, encoding="utf-8")
    env = fake_openai.gateway_env()
    async with running_gateway(home, env) as gw:
        # An earlier session, so the provider has something to recall later.
        await gw.say("the zeppelin project ships in March")
        await notes_stored(home, 1)
        await gw.say("/new")
        start = len(fake_openai.requests)
        for n in range(5):
            await turn(gw, fake_openai, n)
    async with running_gateway(home, env) as gw:
        for n in range(5, 10):
            await turn(gw, fake_openai, n)

    session = fake_openai.requests[start:]
    assert len(session) == 12  # 10 turns, two of them with a tool call
    assert_prefix_stable(session)
    recalled = [r for r in session if "<memory-context>" in r["messages"][-1].get("content", "")]
    assert recalled, "no turn carried recalled context"
    assert "Fact number 2" not in session[-1]["messages"][0]["content"]
