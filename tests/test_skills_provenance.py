"""Provenance: only the background review's writes are the agent's; adopt hands one over."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from core.skills.provenance import current_origin, write_origin
from core.skills.tools import SkillTools
from core.tools import ToolContext

SKILL = "---\nname: {name}\ndescription: Do {name} the careful way\n---\nSteps.\n"


def ctx() -> ToolContext:
    return ToolContext("s1", "webhook:c1", "webhook", "c1", "u1")


def create(tools: SkillTools, name: str) -> dict[str, object]:
    manage = next(t for t in tools.tools(["skill_manage"]) if t.spec.name == "skill_manage")
    args = {"operations": [{"action": "create", "name": name, "content": SKILL.format(name=name)}]}
    result: dict[str, object] = json.loads(asyncio.run(manage.call(args, ctx())))
    return result


def test_the_origin_defaults_to_foreground_and_is_restored() -> None:
    assert current_origin() == "foreground"
    with write_origin("background_review"):
        assert current_origin() == "background_review"
    assert current_origin() == "foreground"


def test_a_foreground_write_belongs_to_the_user(tmp_path: Path) -> None:
    tools = SkillTools(tmp_path / "skills")
    assert create(tools, "deploy")["success"] is True
    record = tools.usage.get("deploy")
    assert record is not None
    assert record.created_by == "user"


def test_a_background_review_write_is_the_agents(tmp_path: Path) -> None:
    tools = SkillTools(tmp_path / "skills")
    with write_origin("background_review"):
        assert create(tools, "triage")["success"] is True
    record = tools.usage.get("triage")
    assert record is not None
    assert record.created_by == "agent"


def test_adopt_hands_a_user_skill_to_the_curator_keeping_its_clock(tmp_path: Path) -> None:
    tools = SkillTools(tmp_path / "skills")
    create(tools, "deploy")
    before = tools.usage.get("deploy")
    tools.usage.adopt("deploy")
    after = tools.usage.get("deploy")
    assert before is not None
    assert after is not None
    assert after.created_by == "agent"
    assert after.created_at == before.created_at
    assert after.last_used_at == before.last_used_at
