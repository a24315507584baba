"""Skills through the gateway: created by the model, indexed for the next session, viewed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway, tool_result

SKILL = """---
name: release-notes
description: Write release notes from a list of merged changes
---
1. Group changes by area.
2. Lead with what users notice.
"""


async def test_a_skill_the_model_writes_is_indexed_next_session_and_viewable(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        fake_openai.reply_tool_call(
            "skill_manage",
            {"operations": [{"action": "create", "name": "release-notes", "content": SKILL}]},
        )
        fake_openai.reply_text("Saved the procedure.")
        await gw.say("save how we write release notes as a skill")
        await gw.say("/new")
        fake_openai.reply_tool_call("skill_view", {"name": "release-notes"})
        fake_openai.reply_text("Loaded it.")
        await gw.say("write the release notes")

    created = tool_result(fake_openai.requests[1])
    assert created["success"] is True
    assert (home / "skills" / "release-notes" / "SKILL.md").read_text() == SKILL
    same_session_system = fake_openai.requests[1]["messages"][0]["content"]
    next_system = fake_openai.requests[2]["messages"][0]["content"]
    assert "release-notes" not in same_session_system  # the running prompt stays frozen
    assert "## Skills (mandatory)" in next_system
    assert "- release-notes: Write release notes from a list of merged changes" in next_system
    viewed = tool_result(fake_openai.requests[3])
    assert viewed["content"] == SKILL
    usage = json.loads((home / "skills" / ".usage.json").read_text())
    assert usage["release-notes"]["view_count"] == 1


async def test_a_broken_write_is_refused_and_leaves_nothing(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.reply_tool_call(
        "skill_manage",
        {
            "operations": [
                {
                    "action": "create",
                    "name": "ok-skill",
                    "content": SKILL.replace("release-notes", "ok-skill"),
                },
                {
                    "action": "write_file",
                    "name": "ok-skill",
                    "file_path": "../escape.txt",
                    "file_content": "x",
                },
            ]
        },
    )
    fake_openai.reply_text("That did not work.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("make a skill")

    refused = tool_result(fake_openai.requests[1])
    assert refused["success"] is False
    assert refused["rolled_back"] is True
    assert not (home / "skills" / "ok-skill").exists()


async def test_slash_skill_loads_it_for_that_turn_only(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    folder = home / "skills" / "release-notes"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL, encoding="utf-8")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("/release-notes for version 2.1")
        await gw.say("/no-such-skill please")
        history = await gw.gateway.db.history((await gw.say("thanks")).json()["session_id"])

    sent = fake_openai.requests[0]["messages"][-1]["content"]
    assert sent.startswith("/release-notes for version 2.1\n\n<skill-context")
    assert "2. Lead with what users notice." in sent
    assert "<skill-context" not in fake_openai.requests[1]["messages"][-1]["content"]
    assert history[0].content == "/release-notes for version 2.1"  # the transcript as typed
    assert history[0].api_content == sent
    usage = json.loads((home / "skills" / ".usage.json").read_text())
    assert usage["release-notes"]["use_count"] == 1
