"""The tool policy: a public route or group chat is offered fewer tools than the owner's
chat, and a call of a tool not offered (or since denied) is refused. Over real HTTP
against the fake model, whose recorded requests show the tool lists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.errors import ConfigError
from gateway.config import load_settings
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway, tool_result
from tests.test_cli import chatgate

Json = dict[str, Any]


def write_config(home: Path, tools: Json) -> None:
    (home / "config.yaml").write_text(json.dumps({"tools": tools}), encoding="utf-8")


def tool_names(request: Json) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


POLICY: Json = {
    "deny": ["cronjob"],
    "platforms": {"webhook": {"deny": ["send_file"]}},
    "routes": {"public": {"allow": ["session_search", "skill*"], "deny": ["skill_manage"]}},
    "chats": {"webhook:owner": {"allow": ["*"]}},
}


async def test_each_level_narrows_what_a_chat_is_offered(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, POLICY)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hi", chat_id="dm")
        await gw.say("hi", chat_id="group", route="public")
        await gw.say("hi", chat_id="owner", route="public")

    dm, group, owner = (tool_names(r) for r in fake_openai.requests)
    assert "memory" in dm
    assert "cronjob" not in dm  # the profile's deny
    assert group == ["session_search", "skills_list", "skill_view"]  # the route's allow
    # The chat's allow wins over the route's, but every level's deny still applies.
    assert "memory" in owner
    assert not {"cronjob", "skill_manage"} & set(owner)
    assert len(group) < len(owner)


async def test_sessions_show_lists_the_tools_a_session_was_offered(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, POLICY)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        session_id = (await gw.say("hi", chat_id="group", route="public")).json()["session_id"]

    shown = chatgate("sessions", "show", session_id)

    assert shown.returncode == 0, shown.stderr
    assert "tools: session_search, skills_list, skill_view\n" in shown.stdout


async def test_a_call_of_a_tool_not_offered_is_refused(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, POLICY)
    fake_openai.reply_tool_call("memory", {"action": "add", "target": "memory", "content": "x"})
    fake_openai.reply_text("could not")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        reply = await gw.say("remember x", chat_id="group", route="public")

    result = tool_result(fake_openai.requests[1])
    assert result == {
        "success": False,
        "error": "'memory' is not offered in this session. Use only the tools you were given.",
    }
    assert [r["text"] for r in reply.json()["replies"]] == ["could not"]
    assert not (home / "memories" / "MEMORY.md").exists()


async def test_a_tool_denied_after_the_session_began_is_refused_but_stays_listed(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello")
    write_config(home, {"deny": ["memory"]})
    fake_openai.reply_tool_call("memory", {"action": "add", "target": "memory", "content": "x"})
    fake_openai.reply_text("refused")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("remember x")
        status = (await gw.say("/status")).json()["replies"][0]["text"]

    first, call, answer = fake_openai.requests
    assert call["tools"] == first["tools"]
    assert tool_result(answer)["error"] == "'memory' is refused by this chat's tool policy."
    assert "Tools changed since this session began: -memory; /new to use them" in status


def test_the_policy_comes_from_the_environment_too(home: Path) -> None:
    env = {
        "CHATGATE_TOOLS__DENY": "cronjob, mcp_shell_*",
        "CHATGATE_TOOLS__ROUTES": '{"public": {"allow": ["session_search"]}}',
    }
    tools = load_settings(home, env).tools

    assert tools.deny == ["cronjob", "mcp_shell_*"]
    assert tools.routes["public"].allow == ["session_search"]
    assert tools.allow == ["*"]


@pytest.mark.parametrize(
    ("tools", "key", "reason"),
    [
        ({"platforms": {"nosuch": {"deny": ["*"]}}}, "tools.platforms.nosuch", "no platform"),
        ({"chats": {"nosuch:1": {"deny": ["*"]}}}, "tools.chats.nosuch:1", "no platform"),
        ({"chats": {"alice": {"deny": ["*"]}}}, "tools.chats", "platform:chat_id"),
        ({"deny": [""]}, "tools.deny", "not a tool-name glob"),
        ({"routes": {"public": {"alow": ["*"]}}}, "tools.routes.public.alow", "unknown setting"),
    ],
)
def test_a_bad_policy_is_one_config_error(home: Path, tools: Json, key: str, reason: str) -> None:
    write_config(home, tools)
    with pytest.raises(ConfigError) as caught:
        load_settings(home, {})

    assert caught.value.key == key
    assert reason in caught.value.reason
    assert "\n" not in str(caught.value)


async def test_the_prompt_speaks_only_of_the_tools_a_chat_is_offered(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, {"chats": {"webhook:public": {"allow": ["session_search"]}}})
    skill = home / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: deploy\ndescription: Ship the app to production.\n---\nSteps.\n",
        encoding="utf-8",
    )
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hi", chat_id="owner")
        await gw.say("hi", chat_id="public")

    owner, public = (r["messages"][0]["content"] for r in fake_openai.requests)
    assert "skill_view(name)" in owner
    assert "deploy" in owner
    assert "skill_view" not in public  # no index that tells it to load skills it cannot
    assert "deploy" not in public
