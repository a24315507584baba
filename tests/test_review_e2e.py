"""The background review through the gateway, with the fake model and real HTTP."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.review.service import ReviewService
from core.store.db import SessionDB
from gateway.features.review import Review
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway

REVIEW = "[Background review"
SKILL = """---
name: tidy-imports
description: Use when imports need sorting in a Python file
---
1. Run the formatter.
"""


def reviews_of(gw: RunningGateway) -> ReviewService:
    service = gw.gateway.feature(Review).service
    assert service is not None
    return service


def review_rows(home: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(home / "state.db") as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM reviews ORDER BY id")]


def transcript(home: Path) -> list[str]:
    with sqlite3.connect(home / "state.db") as conn:
        return [r[0] or "" for r in conn.execute("SELECT content FROM messages ORDER BY id")]


async def chat(gw: RunningGateway, count: int, *, start: int = 1, chat_id: str = "c1") -> None:
    for n in range(start, start + count):
        response = await gw.say(f"message {n}", chat_id=chat_id, message_id=f"{chat_id}-{n}")
        assert response.status_code == 200, response.text


async def pulled(gw: RunningGateway, chat_id: str = "c1") -> list[str]:
    response = await gw.client.get(f"/webhook/demo/chats/{chat_id}/replies", params={"after": 0})
    return [r["text"] for r in response.json()["replies"]]


async def test_the_tenth_user_turn_schedules_exactly_one_review_after_the_reply(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await chat(gw, 9)
        await reviews_of(gw).wait()
        assert fake_openai.requests_for(REVIEW) == []
        assert review_rows(home) == []

        fake_openai.reply_text("Nothing to save.", when=REVIEW)
        await chat(gw, 1, start=10)
        await reviews_of(gw).wait()
        assert len(fake_openai.requests_for(REVIEW)) == 1
        # The review came after the reply: the 10th turn's request was answered first.
        tenth = next(i for i, r in enumerate(fake_openai.requests) if "message 10" in str(r))
        review = fake_openai.requests.index(fake_openai.requests_for(REVIEW)[0])
        assert review > tenth

        await chat(gw, 9, start=11)
        await reviews_of(gw).wait()
        assert len(fake_openai.requests_for(REVIEW)) == 1
        metrics = (await gw.client.get("/metrics")).text
        assert 'chatgate_reviews_total{status="done"} 1.0' in metrics

    rows = review_rows(home)
    assert [(r["kinds"], r["status"], r["at_message_count"]) for r in rows] == [
        ("memory", "done", 20)
    ]
    assert not any(REVIEW in text for text in transcript(home))  # never in the chat's record


async def test_the_review_forks_the_parent_prompt_with_only_memory_and_skill_tools(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("memory:\n  nudge_interval: 2\n")
    fake_openai.reply_tool_call("session_search", {"query": "x"}, when=REVIEW)
    fake_openai.reply_text("Nothing to save.", when=REVIEW)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await chat(gw, 2)
        await reviews_of(gw).wait()

    parent = fake_openai.requests[1]
    first, second = fake_openai.requests_for(REVIEW)
    assert first["messages"][0] == parent["messages"][0]  # the stored system prompt, exactly
    assert first["messages"][1:-1] == parent["messages"][1:] + [
        {"role": "assistant", "content": "echo: message 2"}
    ]
    parent_tools = [t["function"]["name"] for t in parent["tools"]]
    review_tools = [t["function"]["name"] for t in first["tools"]]
    assert "session_search" in parent_tools
    assert review_tools == ["memory", "skills_list", "skill_view", "skill_manage"]
    refused = json.loads(second["messages"][-1]["content"])
    assert refused["success"] is False
    assert "refused" in refused["error"]


async def test_a_skill_the_review_creates_is_the_agents_and_a_foreground_one_is_not(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("memory:\n  nudge_interval: 2\n")
    foreground = SKILL.replace("tidy-imports", "by-request")
    fake_openai.reply_tool_call(
        "skill_manage", {"action": "create", "name": "by-request", "content": foreground}
    )
    fake_openai.reply_text("Saved.")
    fake_openai.reply_tool_call(
        "skill_manage", {"action": "create", "name": "tidy-imports", "content": SKILL}, when=REVIEW
    )
    fake_openai.reply_text("Saved one skill.", when=REVIEW)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await chat(gw, 2)
        await reviews_of(gw).wait()
        replies = await pulled(gw)

    usage = json.loads((home / "skills" / ".usage.json").read_text())
    assert usage["tidy-imports"]["created_by"] == "agent"
    assert usage["by-request"]["created_by"] == "user"
    assert replies[-1] == "Skills updated: created tidy-imports."
    assert review_rows(home)[0]["changes"] == json.dumps(["skills: created tidy-imports"])


async def test_a_memory_review_writes_memory_and_tells_the_chat(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("memory:\n  nudge_interval: 3\n")
    fake_openai.reply_tool_call(
        "memory",
        {"action": "add", "target": "user", "content": "Prefers metric units"},
        when=REVIEW,
    )
    fake_openai.reply_text("Saved.", when=REVIEW)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await chat(gw, 3)
        await reviews_of(gw).wait()
        replies = await pulled(gw)
        status = (await gw.say("/status")).json()["replies"][0]["text"]

    assert "Prefers metric units" in (home / "memories" / "USER.md").read_text()
    assert replies == [
        "echo: message 1",
        "echo: message 2",
        "echo: message 3",
        "Memory updated: added an entry to the user profile.",
    ]
    assert "Background review: memory review in 3 turns" in status


async def test_the_next_turn_is_answered_while_a_review_is_still_running(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("memory:\n  nudge_interval: 2\n")
    release = asyncio.Event()
    fake_openai.block(release, when=REVIEW)
    fake_openai.reply_text("Nothing to save.", when=REVIEW)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await chat(gw, 2)
        service = reviews_of(gw)
        await asyncio.wait_for(fake_openai.arrival(REVIEW).wait(), 10)  # review at the model

        response = await gw.say("message 3", message_id="c1-3")
        assert response.json()["replies"] == [{"text": "echo: message 3"}]
        assert service.running == 1  # still held at the model: the user went first
        assert review_rows(home)[0]["status"] == "running"

        release.set()
        await service.wait()
    assert review_rows(home)[0]["status"] == "done"


async def test_a_restart_mid_count_keeps_the_cadence(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("memory:\n  nudge_interval: 5\n")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await chat(gw, 3)
        status = (await gw.say("/status")).json()["replies"][0]["text"]
    assert "memory review in 2 turns" in status
    fake_openai.reply_text("Nothing to save.", when=REVIEW)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await chat(gw, 1, start=4)
        await reviews_of(gw).wait()
        assert fake_openai.requests_for(REVIEW) == []
        await chat(gw, 1, start=5)
        await reviews_of(gw).wait()
        assert len(fake_openai.requests_for(REVIEW)) == 1
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await chat(gw, 4, start=6)
        await reviews_of(gw).wait()
    assert len(fake_openai.requests_for(REVIEW)) == 1  # the count restarted from the review


async def test_memory_writes_by_the_model_reset_the_count(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("memory:\n  nudge_interval: 3\n")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await chat(gw, 2)
        fake_openai.reply_tool_call("memory", {"action": "add", "target": "memory", "content": "x"})
        fake_openai.reply_text("Noted.")
        await chat(gw, 1, start=3)
        await chat(gw, 2, start=4)
        await reviews_of(gw).wait()
        assert fake_openai.requests_for(REVIEW) == []
        fake_openai.reply_text("Nothing to save.", when=REVIEW)
        await chat(gw, 1, start=6)
        await reviews_of(gw).wait()
    assert len(fake_openai.requests_for(REVIEW)) == 1


async def test_tool_iterations_schedule_a_skill_review_combined_with_a_due_memory_review(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text(
        "memory:\n  nudge_interval: 2\nskills:\n  nudge_interval: 2\n"
    )
    fake_openai.reply_tool_call("skills_list", {})
    fake_openai.reply_text("One.")
    fake_openai.reply_tool_call("skills_list", {})
    fake_openai.reply_text("Two.")
    fake_openai.reply_text("Nothing to save.", when=REVIEW)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await chat(gw, 2)
        await reviews_of(gw).wait()
    (review,) = fake_openai.requests_for(REVIEW)
    instruction = review["messages"][-1]["content"]
    assert "`memory` tool" in instruction
    assert "`skill_manage`" in instruction
    assert [r["kinds"] for r in review_rows(home)] == ["memory,skills"]


async def test_a_review_interrupted_by_shutdown_runs_again_at_the_next_start(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("memory:\n  nudge_interval: 2\n")
    fake_openai.block(asyncio.Event(), when=REVIEW)  # never released: shutdown cuts it off
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await chat(gw, 2)
        await asyncio.wait_for(fake_openai.arrival(REVIEW).wait(), 10)
    assert review_rows(home)[0]["status"] == "running"

    fake_openai.reply_text("Nothing to save.", when=REVIEW)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await reviews_of(gw).wait()
    assert [r["status"] for r in review_rows(home)] == ["done"]


async def test_a_skill_a_resumed_review_creates_is_still_the_agents(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("memory:\n  nudge_interval: 2\n")
    fake_openai.block(asyncio.Event(), when=REVIEW)  # cut off by the shutdown
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await chat(gw, 2)
        await asyncio.wait_for(fake_openai.arrival(REVIEW).wait(), 10)

    fake_openai.reply_tool_call(
        "skill_manage", {"action": "create", "name": "tidy-imports", "content": SKILL}, when=REVIEW
    )
    fake_openai.reply_text("Saved one skill.", when=REVIEW)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await reviews_of(gw).wait()

    usage = json.loads((home / "skills" / ".usage.json").read_text())
    assert usage["tidy-imports"]["created_by"] == "agent"
    assert [r["status"] for r in review_rows(home)] == ["done"]


async def test_reviews_can_be_switched_off(home: Path, fake_openai: FakeOpenAIServer) -> None:
    (home / "config.yaml").write_text("memory:\n  nudge_interval: 1\nreview:\n  enabled: false\n")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await chat(gw, 3)
        with pytest.raises(LookupError):
            gw.gateway.feature(Review)
        status = (await gw.say("/status")).json()["replies"][0]["text"]
    assert fake_openai.requests_for(REVIEW) == []
    assert "Background review" not in status


async def test_a_review_waiting_on_a_busy_chat_does_not_hold_up_other_chats_reviews(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("memory:\n  nudge_interval: 2\n")
    first_call, third = asyncio.Event(), asyncio.Event()
    fake_openai.block(first_call, when=REVIEW)
    fake_openai.reply_tool_call("skills_list", {}, when=REVIEW)  # the busy chat's review
    fake_openai.reply_text("Nothing to save.", when=REVIEW)  # the quiet chat's review
    fake_openai.reply_text("Nothing to save.", when=REVIEW)  # the busy chat's, at last
    fake_openai.block(third, when="THIRD")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        service = reviews_of(gw)
        await chat(gw, 2, chat_id="busy")
        await asyncio.wait_for(fake_openai.arrival(REVIEW).wait(), 10)
        # The person writes again while the review is at the model; that turn takes long.
        body = {"chat_id": "busy", "user_id": "u1", "text": "THIRD", "message_id": "busy-3"}
        queued = await gw.client.post("/webhook/demo", params={"wait": "false"}, json=body)
        assert queued.status_code == 202
        await asyncio.wait_for(fake_openai.arrival("THIRD").wait(), 10)
        first_call.set()  # the review's next model call now waits for the busy chat ...

        await chat(gw, 2, chat_id="quiet")  # ... without blocking the quiet chat's review
        await until(lambda: [r["status"] for r in review_rows(home)] == ["running", "done"])

        third.set()
        await service.wait()
    assert [r["status"] for r in review_rows(home)] == ["done", "done"]


async def until(predicate: Callable[[], bool]) -> None:
    """Wait (bounded) for state another task writes to the SessionDB."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)  # noqa: ASYNC110 - polling rows another task writes


async def test_every_reviews_instruction_is_stored_once_and_read_back_in_place(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("memory:\n  nudge_interval: 2\n")
    for _ in range(2):
        fake_openai.reply_text("Nothing to save.", when=REVIEW)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        for chat_id in ("c1", "c2"):
            await chat(gw, 2, chat_id=chat_id)
            await reviews_of(gw).wait()
        url = gw.settings.database_url

    rows = review_rows(home)
    sent = [r["messages"][-1]["content"] for r in fake_openai.requests_for(REVIEW)]
    async with SessionDB(url) as db:
        read = [await db.reviews.transcript(r["id"]) for r in rows]
    with sqlite3.connect(home / "state.db") as conn:
        stored = [b for (b,) in conn.execute("SELECT body FROM prompts") if REVIEW in b]

    assert len(rows) == 2
    assert stored == [sent[0]] == [sent[1]]  # one copy for both reviews
    assert not any(REVIEW in r["transcript"] for r in rows)
    assert [(t[0]["role"], t[0]["content"]) for t in read if t] == [("user", sent[0])] * 2
    assert [m["content"] for t in read if t for m in t[1:]] == ["Nothing to save."] * 2
