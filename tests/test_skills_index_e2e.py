"""The next session's skills index after writes the chat's model did not make itself.

An approved staged batch, a curator pass that archives and a consolidation that merges all
write through the gateway's one skill store; the session after each must list the change.
Each test builds the index once before the write, so a stale cache would show.
"""

from __future__ import annotations

import time
from pathlib import Path

from core.skills.approval import SkillApprovals
from core.skills.store import SkillStore
from tests.curator_helpers import add_skill, curator_of
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway

SURVEY = "Candidate skills (curator-managed)"


def skill_text(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n1. Do it.\n"


def system_prompt(fake_openai: FakeOpenAIServer, said: str) -> str:
    """The system prompt of the session that answered ``said``."""
    content: str = fake_openai.requests_for(said)[0]["messages"][0]["content"]
    return content


async def test_an_approved_skill_is_in_the_next_sessions_index(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text(
        "skills:\n  write_approval: true\nwebhook:\n  owners: [u1]\n", encoding="utf-8"
    )
    add_skill(home / "skills", "existing", description="Was here before")
    staged = skill_text("release-notes", "Write release notes")
    fake_openai.reply_tool_call(
        "skill_manage",
        {"operations": [{"action": "create", "name": "release-notes", "content": staged}]},
    )
    fake_openai.reply_text("Staged it.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("save how we write release notes")
        (write,) = SkillApprovals(home, SkillStore(home / "skills")).list()
        await gw.say(f"/skills approve {write.id}")
        await gw.say("/new")
        await gw.say("first message after the approval")

    before = system_prompt(fake_openai, "save how we write release notes")
    after = system_prompt(fake_openai, "first message after the approval")
    assert "- existing: Was here before" in before
    assert "release-notes" not in before
    assert "- existing: Was here before" in after
    assert "- release-notes: Write release notes" in after


async def test_a_skill_the_curator_archives_leaves_the_next_sessions_index(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    skills = home / "skills"
    add_skill(skills, "forgotten", idle_days=100, now=time.time(), description="Old procedure")
    add_skill(skills, "busy", idle_days=1, now=time.time(), description="Used daily")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello before the pass")
        report = await curator_of(gw).run("manual")
        await gw.say("/new")
        await gw.say("hello after the pass")

    assert [(t.name, t.after) for t in report.transitions] == [("forgotten", "archived")]
    before = system_prompt(fake_openai, "hello before the pass")
    after = system_prompt(fake_openai, "hello after the pass")
    assert "- forgotten: Old procedure" in before
    assert "forgotten" not in after
    assert "- busy: Used daily" in after


async def test_a_consolidation_shows_its_umbrella_and_hides_what_it_absorbed(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("curator:\n  consolidate: true\n", encoding="utf-8")
    skills = home / "skills"
    for name in ("deploy-web", "deploy-api"):
        add_skill(skills, name, idle_days=5, now=time.time(), description=f"Ship {name}")
    umbrella = skill_text("deploy", "Deploy any service")
    fake_openai.reply_tool_call(
        "skill_manage",
        {"operations": [{"action": "create", "name": "deploy", "content": umbrella}]},
        when=SURVEY,
    )
    fake_openai.reply_tool_calls(
        [
            ("skill_absorb", {"name": "deploy-web", "into": "deploy"}),
            ("skill_absorb", {"name": "deploy-api", "into": "deploy"}),
        ],
        when=SURVEY,
    )
    fake_openai.reply_text("Merged both into deploy.", when=SURVEY)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello before the merge")
        report = await curator_of(gw).run("manual")
        await gw.say("/new")
        await gw.say("hello after the merge")

    assert report.consolidation is not None
    assert report.consolidation.absorbed == [("deploy-web", "deploy"), ("deploy-api", "deploy")]
    before = system_prompt(fake_openai, "hello before the merge")
    after = system_prompt(fake_openai, "hello after the merge")
    assert "- deploy-web: Ship deploy-web" in before
    assert "- deploy: Deploy any service" in after
    assert "deploy-web" not in after
    assert "deploy-api" not in after
