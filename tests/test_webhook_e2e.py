"""End to end over real HTTP: the running app, the real openai client, the fake model server."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml
from sqlalchemy import select

from core.models.base import ToolSpec
from core.store.records import TurnReplies
from core.store.schema import inbox, messages, sessions
from core.tools import ToolContext
from tests.direct_sql import read_rows
from tests.fakes.openai_server import FakeOpenAIServer, last_user_content
from tests.gateway_server import RunningGateway, running_gateway

Json = dict[str, Any]

DOWN_REPLY = "The model provider is not answering right now; please try again shortly."


def write_config(home: Path, **sections: Json) -> None:
    """config.yaml with fast retries (tests never wait on real backoff) plus ``sections``."""
    model = {"retry_base_seconds": 0.01, "retry_max_seconds": 0.05, "max_retries": 2}
    config: Json = {"model": {**model, "timeout_seconds": 5}}
    for name, values in sections.items():
        config[name] = {**config.get(name, {}), **values}
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def texts(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [reply["text"] for reply in response.json()["replies"]]


def wire_messages(body: Json) -> list[tuple[str, str | None]]:
    """(role, content) of every message the model was sent."""
    return [(m["role"], m.get("content")) for m in body["messages"]]


async def until(condition: Callable[[], bool], *, seconds: float = 10.0) -> None:
    """Wait (bounded) for a condition that no event announces, such as the fake's request log."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.005)


async def rows(gw: RunningGateway, stmt: Any) -> list[Any]:
    return await read_rows(gw.settings.database_url, stmt)


async def inbox_rows(gw: RunningGateway) -> list[Any]:
    return await rows(gw, select(inbox).order_by(inbox.c.id))


async def turn_of(gw: RunningGateway, message_id: str) -> TurnReplies:
    """Await the turn of an accepted message through the core (no polling)."""
    found = await rows(gw, select(inbox.c.id).where(inbox.c.platform_message_id == message_id))
    item = await gw.gateway.db.inbox_item(found[0].id)
    assert item is not None
    return await gw.gateway.core.ingress.replies(item)


# -- a plain turn -----------------------------------------------------------------------


async def test_hello_is_answered_by_the_model(home: Path, fake_openai: FakeOpenAIServer) -> None:
    write_config(home)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        response = await gw.say("hello")
        session = await gw.gateway.db.session(response.json()["session_id"])

    assert texts(response) == ["echo: hello"]
    assert response.json()["message_id"]
    assert session is not None
    assert len(fake_openai.requests) == 1
    sent = fake_openai.requests[0]
    assert sent["model"] == "fake-model"
    assert wire_messages(sent) == [("system", session.system_prompt), ("user", "hello")]
    assert "chatgate" in session.system_prompt


async def test_turn_is_stored_with_its_session(home: Path, fake_openai: FakeOpenAIServer) -> None:
    write_config(home)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        response = await gw.say("hello", message_id="m1")
        stored = await rows(gw, select(messages).order_by(messages.c.id))
        [item] = await inbox_rows(gw)

    session_id = response.json()["session_id"]
    assert [(m.role, m.content, m.session_id) for m in stored] == [
        ("user", "hello", session_id),
        ("assistant", "echo: hello", session_id),
    ]
    assert stored[0].platform_message_id == "m1"
    assert (item.status, item.session_id, item.platform_message_id) == ("done", session_id, "m1")


# -- sessions: /new, /reset and restarts ----------------------------------------------------


async def test_new_and_reset_start_fresh_sessions(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        first = (await gw.say("one")).json()["session_id"]
        ended = await gw.say("/new")
        second = (await gw.say("two")).json()["session_id"]
        await gw.say("/reset")
        third = (await gw.say("three")).json()["session_id"]
        old = await gw.gateway.db.session(first)

    assert len({first, second, third}) == 3
    assert ended.json()["session_id"] == first
    assert "new session" in texts(ended)[0]
    assert old is not None
    assert old.end_reason == "new"
    assert old.ended_at is not None
    # The fresh session's model call carries no earlier turn.
    assert wire_messages(fake_openai.requests[-1])[1:] == [("user", "three")]
    assert len(fake_openai.requests) == 3  # commands never reach the model


async def test_users_of_one_chat_share_its_session_and_its_new(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        alice = (await gw.say("hi", user_id="alice")).json()["session_id"]
        bob = (await gw.say("hi", user_id="bob")).json()["session_id"]
        await gw.say("/new", user_id="alice")
        bob_after = (await gw.say("again", user_id="bob")).json()["session_id"]

    assert alice == bob
    assert bob_after != bob  # alice's /new ended bob's session too


async def test_sessions_per_user_gives_each_user_of_a_chat_their_own_session(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, webhook={"sessions_per_user": True})
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        alice = (await gw.say("I am alice", user_id="alice")).json()["session_id"]
        bob = (await gw.say("I am bob", user_id="bob")).json()["session_id"]
        await gw.say("/new", user_id="alice")
        bob_after = (await gw.say("still bob", user_id="bob")).json()["session_id"]
        alice_after = (await gw.say("new alice", user_id="alice")).json()["session_id"]

    assert alice != bob
    assert bob_after == bob  # alice's /new is hers alone
    assert alice_after != alice
    # Bob's model call saw his own history, none of alice's.
    bob_call = [m for m in fake_openai.requests if last_user_content(m) == "still bob"]
    assert ("user", "I am alice") not in wire_messages(bob_call[0])
    assert ("user", "I am bob") in wire_messages(bob_call[0])


async def test_restart_keeps_session_prompt_and_history(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, prompt={"identity": "You are the first identity."})
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        before = (await gw.say("hello")).json()["session_id"]
    # A changed configuration must not touch the prompt of a session already running.
    write_config(home, prompt={"identity": "You are the second identity."})
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        response = await gw.say("again")
        after = response.json()["session_id"]
        await gw.say("/new")
        await gw.say("fresh start")

    assert after == before
    assert texts(response) == ["echo: again"]
    first, second, fresh = fake_openai.requests
    prompt_before = first["messages"][0]["content"].encode()
    prompt_after = second["messages"][0]["content"].encode()
    assert prompt_after == prompt_before
    assert b"You are the first identity." in prompt_after
    assert wire_messages(second)[1:] == [
        ("user", "hello"),
        ("assistant", "echo: hello"),
        ("user", "again"),
    ]
    # Only a new session is built from the new configuration.
    assert "You are the second identity." in fresh["messages"][0]["content"]


# -- durability and ordering --------------------------------------------------------------


async def test_duplicate_message_id_runs_one_turn(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        first = await gw.say("hello", message_id="m1")
        again = await gw.say("hello", message_id="m1")
        items = await inbox_rows(gw)

    assert len(fake_openai.requests) == 1
    assert texts(first) == texts(again) == ["echo: hello"]
    assert again.json() == first.json()
    assert len(items) == 1


async def test_duplicate_while_the_first_is_running_shares_its_turn(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)
    fake_openai.latency_seconds = 0.2
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        first, again = await asyncio.gather(
            gw.say("hello", message_id="m1"), gw.say("hello", message_id="m1")
        )

    assert len(fake_openai.requests) == 1
    assert texts(first) == texts(again) == ["echo: hello"]
    assert again.json()["session_id"] == first.json()["session_id"]


async def test_concurrent_posts_to_one_chat_are_answered_in_order(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)
    fake_openai.latency_seconds = 0.2  # each turn takes long enough for the posts to overlap
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        responses = await asyncio.gather(
            *(gw.say(f"msg {i}", message_id=f"m{i}") for i in range(1, 6))
        )
        accepted = await inbox_rows(gw)
        stored = await rows(gw, select(messages).order_by(messages.c.id))

    for i, response in enumerate(responses, start=1):
        assert texts(response) == [f"echo: msg {i}"]
        assert response.json()["message_id"] == f"m{i}"
    order = [row.text for row in accepted]
    assert sorted(order) == [f"msg {i}" for i in range(1, 6)]
    # The posts really overlapped: the second was accepted before the first was answered.
    assert accepted[1].received_at < accepted[0].processed_at
    # The model saw them one at a time, in acceptance order, each with every earlier turn.
    assert [last_user_content(body) for body in fake_openai.requests] == order
    for number, body in enumerate(fake_openai.requests):
        assert len(body["messages"]) == 1 + 2 * number + 1
    assert [m.content for m in stored if m.role == "user"] == order
    assert len({r.json()["session_id"] for r in responses}) == 1


async def test_fifty_chats_in_parallel(home: Path, fake_openai: FakeOpenAIServer) -> None:
    write_config(home)
    fake_openai.latency_seconds = 0.2
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        started = time.monotonic()
        responses = await asyncio.gather(
            *(gw.say(f"hi from {i}", chat_id=f"chat-{i}") for i in range(50))
        )
        elapsed = time.monotonic() - started

    for i, response in enumerate(responses):
        assert texts(response) == [f"echo: hi from {i}"]
    assert len({r.json()["session_id"] for r in responses}) == 50
    assert len(fake_openai.requests) == 50
    # One chat at a time would take 50 x 0.2 s = 10 s; chats must run side by side.
    assert elapsed < 5.0


# -- model failures -----------------------------------------------------------------------


async def test_provider_500_then_success(home: Path, fake_openai: FakeOpenAIServer) -> None:
    write_config(home)
    fake_openai.fail(status=500)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        response = await gw.say("hello")

    assert texts(response) == ["echo: hello"]
    assert len(fake_openai.requests) == 2


async def test_provider_down_gives_clear_reply_and_no_half_turn(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)
    for _ in range(3):  # the first try and both retries
        fake_openai.fail(status=500)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        failed = await gw.say("are you there", message_id="m1")
        attempts = len(fake_openai.requests)
        stored_after_failure = await rows(gw, select(messages))
        [item] = await inbox_rows(gw)
        recovered = await gw.say("now?", message_id="m2")

    assert texts(failed) == [DOWN_REPLY]
    assert attempts == 3
    assert stored_after_failure == []
    assert item.status == "failed"
    assert item.text == "are you there"
    assert item.error
    assert texts(recovered) == ["echo: now?"]
    # The failed message is not half in the history of the next turn.
    assert wire_messages(fake_openai.requests[-1])[1:] == [("user", "now?")]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def test_unreachable_provider_gives_clear_reply(home: Path) -> None:
    write_config(home)
    env = {
        "OPENAI_BASE_URL": f"http://127.0.0.1:{_closed_port()}/v1",
        "OPENAI_API_KEY": "test",
        "CHATGATE_MODEL": "fake-model",
    }
    async with running_gateway(home, env) as gw:
        response = await gw.say("hello")
        stored = await rows(gw, select(messages))
        [item] = await inbox_rows(gw)

    assert texts(response) == [DOWN_REPLY]
    assert "\n" not in DOWN_REPLY
    assert stored == []
    assert item.status == "failed"


async def test_rate_limit_retry_after_is_honoured(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)  # our own backoff is at most 0.05 s
    fake_openai.fail(status=429, retry_after=0.6)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        started = time.monotonic()
        response = await gw.say("hello")
        elapsed = time.monotonic() - started

    assert texts(response) == ["echo: hello"]
    assert len(fake_openai.requests) == 2
    assert elapsed >= 0.6


async def test_rate_limit_until_retries_run_out(home: Path, fake_openai: FakeOpenAIServer) -> None:
    write_config(home)
    for _ in range(3):
        fake_openai.fail(status=429, retry_after=0)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        response = await gw.say("hello")

    [reply] = texts(response)
    assert "rate-limiting" in reply
    assert "\n" not in reply


# -- tools --------------------------------------------------------------------------------


class AddTool:
    """A tiny test tool: adds two numbers and remembers who asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[Json, ToolContext]] = []

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(
            name="add",
            description="Add two numbers.",
            parameters={
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        )

    async def call(self, args: Json, ctx: ToolContext) -> str:
        self.calls.append((args, ctx))
        return json.dumps({"sum": args["a"] + args["b"]})


async def test_tool_call_round_trip(home: Path, fake_openai: FakeOpenAIServer) -> None:
    write_config(home)
    tool = AddTool()
    fake_openai.reply_tool_call("add", {"a": 2, "b": 3}, call_id="call_add")
    fake_openai.reply_text("2 + 3 = 5")
    async with running_gateway(home, fake_openai.gateway_env(), tools=[tool]) as gw:
        response = await gw.say("what is 2 + 3?")
        session_id = response.json()["session_id"]
        stored = await rows(gw, select(messages).order_by(messages.c.id))
        [session] = await rows(gw, select(sessions))

    assert texts(response) == ["2 + 3 = 5"]
    [(args, ctx)] = tool.calls
    assert args == {"a": 2, "b": 3}
    assert (ctx.session_id, ctx.chat_id, ctx.user_id, ctx.platform) == (
        session_id,
        "c1",
        "u1",
        "webhook",
    )
    first, second = fake_openai.requests
    assert [t["function"]["name"] for t in first["tools"]] == [
        "memory",
        "session_search",
        "skills_list",
        "skill_view",
        "skill_manage",
        "cronjob",
        "send_file",
        "add",
    ]
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == "call_add"
    assert json.loads(tool_message["content"]) == {"sum": 5}
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_add"
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[1].tool_calls[0]["name"] == "add"
    assert stored[2].tool_call_id == "call_add"
    assert session.tool_call_count == 1


# -- commands -----------------------------------------------------------------------------


async def test_status_and_help(home: Path, fake_openai: FakeOpenAIServer) -> None:
    write_config(home)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        empty = texts(await gw.say("/status", chat_id="fresh"))[0]
        session_id = (await gw.say("hello")).json()["session_id"]
        status = texts(await gw.say("/status"))[0]
        help_text = texts(await gw.say("/help"))[0]

    assert "Session: none yet" in empty
    assert f"Session: {session_id}" in status
    assert "Turns: 1" in status
    assert "Model: fake-model (provider: openai)" in status
    assert "Started:" in status
    for command in ("/new", "/reset", "/status", "/stop", "/help"):
        assert command in help_text
    assert len(fake_openai.requests) == 1


async def test_stop_cancels_the_running_turn_and_keeps_the_queue(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)
    fake_openai.hang(30)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        slow = asyncio.create_task(gw.say("slow question", message_id="m1"))
        await until(lambda: len(fake_openai.requests) == 1)
        queued = asyncio.create_task(gw.say("next question", message_id="m2"))
        await until(lambda: gw.gateway.core.queued == 1)
        stop = await gw.say("/stop", message_id="m3")
        slow_response, queued_response = await asyncio.wait_for(
            asyncio.gather(slow, queued), timeout=10
        )
        statuses = {row.platform_message_id: row.status for row in await inbox_rows(gw)}
        stored = await rows(gw, select(messages).order_by(messages.c.id))

    assert texts(stop) == ["Stopped."]
    assert texts(slow_response) == []
    assert texts(queued_response) == ["echo: next question"]
    assert statuses == {"m1": "cancelled", "m2": "done", "m3": "done"}
    assert [m.content for m in stored] == ["next question", "echo: next question"]
    assert wire_messages(fake_openai.requests[-1])[1:] == [("user", "next question")]


async def test_stop_with_nothing_running(home: Path, fake_openai: FakeOpenAIServer) -> None:
    write_config(home)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        response = await gw.say("/stop")

    assert texts(response) == ["Nothing is running."]


# -- wait=false and pulled replies -----------------------------------------------------------


async def pull(gw: RunningGateway, after: int, chat_id: str = "c1") -> Json:
    response = await gw.client.get(
        f"/webhook/demo/chats/{chat_id}/replies", params={"after": after}
    )
    assert response.status_code == 200, response.text
    body: Json = response.json()
    return body


async def post_queued(gw: RunningGateway, text: str, message_id: str) -> None:
    body = {"chat_id": "c1", "user_id": "u1", "text": text, "message_id": message_id}
    response = await gw.client.post("/webhook/demo", params={"wait": "false"}, json=body)
    assert response.status_code == 202, response.text
    assert response.json() == {"message_id": message_id, "status": "queued"}


async def test_wait_false_then_pull_replies_with_an_advancing_cursor(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await post_queued(gw, "first", "m1")
        turn = await turn_of(gw, "m1")
        page1 = await pull(gw, after=0)
        await post_queued(gw, "second", "m2")
        await turn_of(gw, "m2")
        page2 = await pull(gw, after=page1["cursor"])
        page3 = await pull(gw, after=page2["cursor"])
        everything = await pull(gw, after=0)
        other_chat = await pull(gw, after=0, chat_id="someone-else")

    [reply1] = page1["replies"]
    assert (reply1["text"], reply1["message_id"]) == ("echo: first", "m1")
    assert reply1["session_id"] == turn.session_id
    assert page1["cursor"] == reply1["id"] > 0
    [reply2] = page2["replies"]
    assert (reply2["text"], reply2["message_id"]) == ("echo: second", "m2")
    assert page2["cursor"] == reply2["id"] > page1["cursor"]
    assert page3 == {"replies": [], "cursor": page2["cursor"]}
    assert [r["text"] for r in everything["replies"]] == ["echo: first", "echo: second"]
    assert other_chat == {"replies": [], "cursor": 0}


async def test_pulled_replies_appear_without_help_from_the_core(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    """The client's view: post with wait=false, then poll GET until the reply is there."""
    write_config(home)
    fake_openai.latency_seconds = 0.1
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await post_queued(gw, "hello", "m1")
        deadline = time.monotonic() + 10
        page = await pull(gw, after=0)
        while not page["replies"]:
            assert time.monotonic() < deadline, "the reply never appeared"
            await asyncio.sleep(0.02)  # a bounded client-side poll, as a real client does
            page = await pull(gw, after=0)

    assert [r["text"] for r in page["replies"]] == ["echo: hello"]


async def test_readiness_and_health(home: Path) -> None:
    async with running_gateway(home, {}) as gw:
        ready = await gw.client.get("/readyz")
        health = await gw.client.get("/healthz")
        docs = await gw.client.get("/openapi.json")

    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "adapters": ["webhook"]}
    assert health.json() == {"status": "ok"}
    assert "/webhook/{route}" in docs.json()["paths"]
