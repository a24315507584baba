"""A slow model is said, not suffered: one notice while the person waits, then one line
within a bound, never minutes of silence. Over real HTTP against the fake model."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

from core.turn_watch import SLOW_NOTICE
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway
from tests.transcript_checks import assert_valid_sequence

Json = dict[str, Any]
DOWN_REPLY = "The model provider is not answering right now; please try again shortly."


def write_config(home: Path, *, model: Json, sessions: Json | None = None) -> None:
    fast = {"retry_base_seconds": 0.01, "retry_max_seconds": 0.05}
    config: Json = {"model": {**fast, **model}, "sessions": sessions or {}}
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


async def chat_replies(gw: RunningGateway, chat_id: str = "c1") -> list[str]:
    """Everything the chat has been sent, in order (turn replies and notices alike)."""
    response = await gw.client.get(f"/webhook/demo/chats/{chat_id}/replies")
    assert response.status_code == 200, response.text
    return [reply["text"] for reply in response.json()["replies"]]


async def test_a_hung_model_gets_one_notice_then_one_line_within_the_call_bound(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    # Four tries of 0.8 s each would keep the person 3.2 s; the call bound is 1.5 s.
    write_config(
        home,
        model={
            "timeout_seconds": 0.8,
            "max_retries": 3,
            "call_timeout_seconds": 1.5,
            "slow_notice_seconds": 0.3,
        },
    )
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        quick = await gw.say("quick one")
        for _ in range(4):
            fake_openai.hang(30)
        started = time.monotonic()
        slow = await gw.say("are you there?")
        elapsed = time.monotonic() - started
        sent = await chat_replies(gw)

    assert [r["text"] for r in quick.json()["replies"]] == ["echo: quick one"]
    assert slow.status_code == 200, slow.text
    assert [r["text"] for r in slow.json()["replies"]] == [DOWN_REPLY]
    assert 1.5 <= elapsed < 2.5
    # A quick turn sent no notice; the hung one sent exactly one, before its one line.
    assert sent == ["echo: quick one", SLOW_NOTICE, DOWN_REPLY]
    assert len(fake_openai.requests) == 1 + 2  # the quick turn, then two tries in 1.5 s


async def test_a_turn_answered_after_the_notice_gets_the_notice_once_then_the_answer(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, model={"slow_notice_seconds": 0.2, "timeout_seconds": 5})
    fake_openai.latency_seconds = 0.3  # every call is slow, none is hung
    fake_openai.reply_tool_call("skills_list", {})
    fake_openai.reply_text("found them")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        response = await gw.say("which skills?")
        sent = await chat_replies(gw)

    assert [r["text"] for r in response.json()["replies"]] == ["found them"]
    assert sent == [SLOW_NOTICE, "found them"]  # two slow calls, one notice


TIMEOUT_LINE = (
    "I stopped: this turn reached its time limit of 1 second (sessions.turn_timeout_seconds). "
    "Tell me to continue, or ask for less at once."
)


async def test_a_turn_past_its_bound_is_stopped_with_one_line_and_a_closed_transcript(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    # Each model call answers in time; the tool loop as a whole does not.
    write_config(
        home,
        model={"slow_notice_seconds": 0, "timeout_seconds": 5},
        sessions={"turn_timeout_seconds": 1.0, "max_iterations": 50},
    )
    fake_openai.routed_latency["keep looking"] = 0.25
    for _ in range(20):
        fake_openai.reply_tool_call("skills_list", {}, when="keep looking")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        started = time.monotonic()
        response = await gw.say("keep looking")
        elapsed = time.monotonic() - started
        sent = await chat_replies(gw)
        status = await gw.say("/status")
        after = await gw.say("and now?")

    assert [r["text"] for r in response.json()["replies"]] == [TIMEOUT_LINE]
    assert 1.0 <= elapsed < 2.0
    assert sent == [TIMEOUT_LINE]  # slow_notice_seconds: 0 sends no notice
    assert status.status_code == 200
    # The session goes on: the next request carries what the stopped turn did, every
    # tool call answered, then the bound's line, then the new message.
    assert [r["text"] for r in after.json()["replies"]] == ["echo: and now?"]
    sent_next = fake_openai.requests[-1]["messages"]
    assert_valid_sequence(sent_next)
    assert [m["role"] for m in sent_next[1:3]] == ["user", "assistant"]
    assert sent_next[1]["content"] == "keep looking"
    assert "tool" in [m["role"] for m in sent_next]
    assert sent_next[-2] == {"role": "assistant", "content": TIMEOUT_LINE}
    assert sent_next[-1] == {"role": "user", "content": "and now?"}


async def test_the_turn_bound_holds_after_the_notice_too(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(
        home,
        model={"slow_notice_seconds": 0.3, "timeout_seconds": 30, "call_timeout_seconds": 60},
        sessions={"turn_timeout_seconds": 1.0},
    )
    fake_openai.hang(30)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        started = time.monotonic()
        response = await gw.say("hello?")
        elapsed = time.monotonic() - started
        sent = await chat_replies(gw)

    assert [r["text"] for r in response.json()["replies"]] == [TIMEOUT_LINE]
    assert 1.0 <= elapsed < 2.0
    assert sent == [SLOW_NOTICE, TIMEOUT_LINE]
