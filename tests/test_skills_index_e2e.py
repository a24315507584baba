"""The next session's skills index after writes the chat's model did not make itself.

An approved staged batch, a curator pass that archives and a consolidation that merges all
write through the gateway's one skill store; the session after each must list the change.
Each test builds the index once before the write, so a stale cache would show.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from core.skills.approval import SkillApprovals
from core.skills.index import SNAPSHOT_NAME
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


def snapshot_file(home: Path) -> Path:
    return home / "skills" / SNAPSHOT_NAME


async def test_the_disk_snapshot_across_restarts(home: Path, fake_openai: FakeOpenAIServer) -> None:
    skills = home / "skills"
    add_skill(skills, "alpha", description="First of its name")
    env = fake_openai.gateway_env()
    async with running_gateway(home, env) as gw:
        await gw.say("first start", chat_id="c1")
    first = json.loads(snapshot_file(home).read_text(encoding="utf-8"))
    assert "alpha/SKILL.md" in first["manifest"]

    # Valid for the tree as it is: a restart takes the index from it, not from SKILL.md.
    marked = {
        slot: text.replace("First of its name", "from the snapshot")
        for slot, text in first["indexes"].items()
    }
    snapshot_file(home).write_text(json.dumps({**first, "indexes": marked}), encoding="utf-8")
    async with running_gateway(home, env) as gw:
        await gw.say("second start", chat_id="c2")
    assert "- alpha: from the snapshot" in system_prompt(fake_openai, "second start")

    # A skill file changed by hand: the manifest no longer matches, the index is rebuilt.
    (skills / "alpha" / "SKILL.md").write_text(
        skill_text("alpha", "Edited by hand, and longer"), encoding="utf-8"
    )
    async with running_gateway(home, env) as gw:
        await gw.say("third start", chat_id="c3")
    assert "- alpha: Edited by hand, and longer" in system_prompt(fake_openai, "third start")
    assert "from the snapshot" not in snapshot_file(home).read_text(encoding="utf-8")

    # A corrupt snapshot is ignored and rewritten.
    snapshot_file(home).write_text('{"version": 1, "indexes": [', encoding="utf-8")
    async with running_gateway(home, env) as gw:
        await gw.say("fourth start", chat_id="c4")
    fourth = system_prompt(fake_openai, "fourth start")
    assert "- alpha: Edited by hand, and longer" in fourth
    rewritten = json.loads(snapshot_file(home).read_text(encoding="utf-8"))
    assert any("Edited by hand" in text for text in rewritten["indexes"].values())


async def test_the_index_tells_the_model_it_must_load_matching_skills(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    add_skill(home / "skills", "alpha", description="First of its name")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello")

    prompt = system_prompt(fake_openai, "hello")
    assert "## Skills (mandatory)" in prompt
    assert (
        "If a skill matches or is even partially relevant to your task, you MUST load it with "
        "skill_view(name) and follow its instructions. Err on the side of loading" in prompt
    )
