"""MCP tools meet the rest of the turn: a tool its server marks destructive waits for an
owner's yes, and the tool policy gives one chat fewer MCP tools than another. A real
MCP server (the SDK's, over stdio) behind the running gateway and the fake model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway
from tests.mcp_helpers import FAKE_SERVER, reached
from tests.test_approvals_e2e import decide, idle, last_tool_result, paused_on, pulled
from tests.test_webhook_e2e import write_config

Json = dict[str, Any]
OWNER = "boss"


def configure(home: Path, **tools: Any) -> None:
    server = {"command": sys.executable, "args": [str(FAKE_SERVER)], "timeout_seconds": 10}
    write_config(
        home,
        mcp={"servers": {"fake": server}},
        tools=tools,
        webhook={"owners": [OWNER]},
    )


def offered(request: Json) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or ()}


async def test_a_destructive_mcp_tool_waits_for_the_owners_yes(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    fake_openai.reply_tool_call("mcp_fake_wipe", {"target": "/srv/old"}, call_id="call_w")
    fake_openai.reply_text("Wiped.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await reached(gw, "fake", "connected")
        response = await gw.say("wipe /srv/old", user_id=OWNER)
        approval = paused_on(response)
        asked_once = len(fake_openai.requests)
        decided = await decide(gw, approval["id"], "approve")
        await idle(gw)
        replies = await pulled(gw)

    assert approval["tool"] == "mcp_fake_wipe"
    assert json.loads(approval["arguments"]) == {"target": "/srv/old"}
    assert asked_once == 1  # the call waited: the model was not asked again meanwhile
    assert decided.status_code == 200, decided.text
    result = last_tool_result(fake_openai.requests[1])
    assert result["success"] is True
    assert "wiped /srv/old" in result["result"]
    assert replies[-1] == "Wiped."


async def test_a_harmless_mcp_tool_runs_without_asking(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    fake_openai.reply_tool_call("mcp_fake_add", {"a": 2, "b": 3})
    fake_openai.reply_text("Five.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await reached(gw, "fake", "connected")
        response = await gw.say("add 2 and 3", user_id=OWNER)

    assert response.json().get("approvals", []) == []
    assert response.json()["replies"] == [{"text": "Five."}]
    assert last_tool_result(fake_openai.requests[1]) == {"success": True, "result": "5"}


async def test_a_public_chat_is_offered_fewer_mcp_tools_than_the_owners(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home, chats={"webhook:public": {"allow": ["mcp_fake_echo", "memory"]}})
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await reached(gw, "fake", "connected")
        await gw.say("hello", chat_id="owner", user_id=OWNER)
        await gw.say("hello", chat_id="public", user_id="someone")
        fake_openai.reply_tool_call("mcp_fake_wipe", {"target": "/"})
        fake_openai.reply_text("I can't do that here.")
        await gw.say("wipe everything", chat_id="public", user_id="someone")

    owner, public = offered(fake_openai.requests[0]), offered(fake_openai.requests[1])
    assert {"mcp_fake_echo", "mcp_fake_add", "mcp_fake_wipe"} <= owner
    assert public == {"mcp_fake_echo", "memory"}
    refused = last_tool_result(fake_openai.requests[3])
    assert refused["success"] is False
    assert "mcp_fake_wipe" in refused["error"]
