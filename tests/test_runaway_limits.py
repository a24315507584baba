"""No tool can flood a turn: ``sessions.max_iterations`` and
``sessions.max_tool_calls_per_turn`` stop it with one line naming the bound, and what is
stored keeps the next request valid (every tool call answered). The time bound's test is
in ``test_slow_model.py``. Over real HTTP against the fake model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway
from tests.transcript_checks import assert_valid_sequence

Json = dict[str, Any]


def write_sessions(home: Path, **sessions: int) -> None:
    (home / "config.yaml").write_text(json.dumps({"sessions": sessions}), encoding="utf-8")


async def test_max_iterations_stops_the_turn_with_one_line(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_sessions(home, max_iterations=2)
    for _ in range(2):
        fake_openai.reply_tool_call("skills_list", {})
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        stopped = await gw.say("loop forever")
        after = await gw.say("go on")

    line = (
        "I stopped: this turn reached its limit of 2 model calls (sessions.max_iterations). "
        "Tell me to continue, or narrow the request."
    )
    assert [r["text"] for r in stopped.json()["replies"]] == [line]
    nxt = fake_openai.requests[2]["messages"]
    assert_valid_sequence(nxt)
    assert [m["role"] for m in nxt[1:]] == [
        "user", "assistant", "tool", "assistant", "tool", "assistant", "user",
    ]  # fmt: skip
    assert nxt[-2] == {"role": "assistant", "content": line}
    assert [r["text"] for r in after.json()["replies"]] == ["echo: go on"]


async def test_max_tool_calls_answers_the_calls_past_it_not_run_and_stops(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_sessions(home, max_tool_calls_per_turn=3)
    fake_openai.reply_tool_calls([("skills_list", {}), ("skills_list", {})])
    fake_openai.reply_tool_calls(
        [("skills_list", {}), ("skills_list", {})], call_ids=["ran", "not_run"]
    )
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        stopped = await gw.say("call lots")
        after = await gw.say("and now?")

    line = (
        "I stopped: this turn reached its limit of 3 tool calls "
        "(sessions.max_tool_calls_per_turn). Tell me to continue, or narrow the request."
    )
    assert [r["text"] for r in stopped.json()["replies"]] == [line]
    assert len(fake_openai.requests) == 3  # two calls of the stopped turn, one of the next
    nxt = fake_openai.requests[2]["messages"]
    assert_valid_sequence(nxt)
    results = {m["tool_call_id"]: json.loads(m["content"]) for m in nxt if m["role"] == "tool"}
    assert results["ran"]["success"] is True
    assert results["not_run"] == {
        "success": False,
        "error": "Not run: the turn reached its limit of 3 tool calls "
        "(sessions.max_tool_calls_per_turn).",
    }
    assert nxt[-2:] == [
        {"role": "assistant", "content": line},
        {"role": "user", "content": "and now?"},
    ]
    assert [r["text"] for r in after.json()["replies"]] == ["echo: and now?"]


async def test_a_turn_that_uses_exactly_its_budget_still_answers(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_sessions(home, max_tool_calls_per_turn=2)
    fake_openai.reply_tool_calls([("skills_list", {}), ("skills_list", {})])
    fake_openai.reply_text("two lists later")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        reply = await gw.say("two please")

    assert [r["text"] for r in reply.json()["replies"]] == ["two lists later"]
