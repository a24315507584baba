"""A session's tool list is frozen like its prompt: byte-identical every turn and after a
restart; a tool that arrives later waits for /new, and /status says so; a tool that left
answers an error instead of reshaping the list. Over real HTTP against the fake model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import select, update

from core.models.base import ToolSpec
from core.session_tools import freeze, thaw
from core.store.schema import prompts, sessions
from core.tools import ToolContext
from gateway.features.search import GUIDANCE as SEARCH_GUIDANCE
from tests.direct_sql import DirectSql, read_rows
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway, tool_result

Json = dict[str, Any]


class ProbeTool:
    """A tool only these tests know, as an MCP server's tool would arrive."""

    def __init__(self, name: str = "mcp_probe_ping", answer: str = "pong") -> None:
        self.answer = answer
        self.spec = ToolSpec(name, "Ping the probe server.", {"type": "object", "properties": {}})

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        return json.dumps({"success": True, "answer": self.answer})


def tool_bytes(request: Json) -> str:
    """The tool list exactly as the model was sent it."""
    return json.dumps(request.get("tools", []))


def tool_names(request: Json) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


async def test_the_tool_list_is_byte_identical_across_turns_and_a_restart(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.reply_tool_call("skills_list", {})
    fake_openai.reply_text("none yet")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("which skills?")
        await gw.say("second turn")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        after = await gw.say("after the restart")

    assert [r["text"] for r in after.json()["replies"]] == ["echo: after the restart"]
    sent = {tool_bytes(request) for request in fake_openai.requests}
    assert len(fake_openai.requests) == 4
    assert len(sent) == 1
    assert {"memory", "session_search", "skills_list"} <= set(tool_names(fake_openai.requests[0]))


async def test_a_tool_registered_mid_session_waits_for_new_and_status_says_so(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello")
        gw.gateway.core.tools.register(ProbeTool())  # a server that connected late
        await gw.say("still here")
        status = (await gw.say("/status")).json()["replies"][0]["text"]
        await gw.say("/new")
        await gw.say("fresh session")
        fresh_status = (await gw.say("/status")).json()["replies"][0]["text"]

    first, same, fresh = fake_openai.requests
    assert tool_bytes(same) == tool_bytes(first)
    assert "mcp_probe_ping" not in tool_names(same)
    assert tool_names(fresh) == [*tool_names(first), "mcp_probe_ping"]
    assert "Tools changed since this session began: +mcp_probe_ping; /new to use them" in status
    assert "Tools changed" not in fresh_status


async def test_a_frozen_tool_whose_implementation_left_answers_an_error(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env(), tools=[ProbeTool()]) as gw:
        await gw.say("hello")
    fake_openai.reply_tool_call("mcp_probe_ping", {})
    fake_openai.reply_text("the probe is gone")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:  # its server is down
        reply = await gw.say("ping it")
        status = (await gw.say("/status")).json()["replies"][0]["text"]

    before, call, answer = fake_openai.requests
    assert tool_bytes(call) == tool_bytes(before)  # the list is not reshaped
    assert "mcp_probe_ping" in tool_names(call)
    result = tool_result(answer)
    assert result["success"] is False
    assert "'mcp_probe_ping' is not available right now" in result["error"]
    assert [r["text"] for r in reply.json()["replies"]] == ["the probe is gone"]
    assert "Tools changed since this session began: -mcp_probe_ping" in status


async def test_the_prompt_guidance_covers_exactly_the_offered_tools(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    config = {"tools": {"chats": {"webhook:quiet": {"deny": ["session_search"]}}}}
    (home / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hi", chat_id="loud")
        await gw.say("hi", chat_id="quiet")

    loud, quiet = fake_openai.requests
    assert "session_search" in tool_names(loud)
    assert "session_search" not in tool_names(quiet)
    assert SEARCH_GUIDANCE in loud["messages"][0]["content"]
    assert SEARCH_GUIDANCE not in quiet["messages"][0]["content"]


async def test_a_session_from_before_frozen_lists_freezes_its_list_at_its_next_turn(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello")
        url = gw.settings.database_url
    async with DirectSql(url) as sql, sql.begin() as conn:  # as migration 0010 left it
        await conn.execute(update(sessions).values(tools_hash=None))
    async with running_gateway(home, fake_openai.gateway_env(), tools=[ProbeTool()]) as gw:
        await gw.say("after the upgrade")
        gw.gateway.core.tools.register(ProbeTool("mcp_probe_late"))
        await gw.say("and again")
    stored = await read_rows(
        url, select(prompts.c.body).join(sessions, sessions.c.tools_hash == prompts.c.hash)
    )

    _, upgraded, again = fake_openai.requests
    assert "mcp_probe_ping" in tool_names(upgraded)  # frozen from what was offered then
    assert tool_bytes(again) == tool_bytes(upgraded)
    assert [json.loads(row.body)[-1]["name"] for row in stored] == ["mcp_probe_ping"]


def test_a_frozen_list_is_encoded_again_whenever_the_tools_change() -> None:
    ping, pong = ProbeTool().spec, ProbeTool("mcp_probe_pong").spec
    first = freeze([ping])
    assert json.loads(first) == [
        {"name": ping.name, "description": ping.description, "parameters": ping.parameters}
    ]
    assert freeze([ping]) == first
    assert [s.name for s in thaw(freeze([ping, pong]))] == [ping.name, pong.name]
    # An equal list of other objects (a registry rebuilt) is encoded, not assumed.
    renamed = ToolSpec(ping.name, "Ping it again.", ping.parameters)
    assert thaw(freeze([renamed]))[0].description == "Ping it again."
    assert freeze([]) == "[]"
