"""Provenance: only the background review's writes are the agent's; adopt hands one over."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

from core.skills.approval import SkillApprovals
from core.skills.store import SkillStore
from core.skills.tools import SkillTools
from core.tools import ToolContext, WriteOrigin

SKILL = "---\nname: {name}\ndescription: Do {name} the careful way\n---\nSteps.\n"


def ctx(origin: WriteOrigin = "foreground") -> ToolContext:
    return ToolContext("s1", "webhook:c1", "webhook", "c1", "u1", origin=origin)


def create(tools: SkillTools, name: str, origin: WriteOrigin = "foreground") -> dict[str, object]:
    manage = next(t for t in tools.tools(["skill_manage"]) if t.spec.name == "skill_manage")
    args = {"operations": [{"action": "create", "name": name, "content": SKILL.format(name=name)}]}
    result: dict[str, object] = json.loads(asyncio.run(manage.call(args, ctx(origin))))
    return result


def test_the_origin_defaults_to_foreground_and_is_per_context() -> None:
    foreground = ToolContext("s1", "webhook:c1", "webhook", "c1", "u1")
    review = dataclasses.replace(foreground, origin="background_review")
    assert foreground.origin == "foreground"
    assert review.origin == "background_review"
    assert foreground.origin == "foreground"  # a review's context never leaks into the chat's


def test_a_foreground_write_belongs_to_the_user(tmp_path: Path) -> None:
    tools = SkillTools(SkillStore(tmp_path / "skills"))
    assert create(tools, "deploy")["success"] is True
    record = tools.usage.get("deploy")
    assert record is not None
    assert record.created_by == "user"


def test_a_background_review_write_is_the_agents(tmp_path: Path) -> None:
    tools = SkillTools(SkillStore(tmp_path / "skills"))
    assert create(tools, "triage", "background_review")["success"] is True
    record = tools.usage.get("triage")
    assert record is not None
    assert record.created_by == "agent"


def test_adopt_hands_a_user_skill_to_the_curator_keeping_its_clock(tmp_path: Path) -> None:
    tools = SkillTools(SkillStore(tmp_path / "skills"))
    create(tools, "deploy")
    before = tools.usage.get("deploy")
    tools.usage.adopt("deploy")
    after = tools.usage.get("deploy")
    assert before is not None
    assert after is not None
    assert after.created_by == "agent"
    assert after.created_at == before.created_at
    assert after.last_used_at == before.last_used_at


def test_a_staged_write_keeps_its_origin_until_it_is_approved(tmp_path: Path) -> None:
    store = SkillStore(tmp_path / "skills")
    approvals = SkillApprovals(tmp_path, store)
    tools = SkillTools(store, approvals=approvals)
    origins: dict[str, WriteOrigin] = {"deploy": "foreground", "triage": "background_review"}
    staged = {name: create(tools, name, origin) for name, origin in origins.items()}
    assert all(payload["staged"] is True for payload in staged.values())
    assert [write.origin for write in approvals.list()] == ["foreground", "background_review"]
    assert tools.usage.get("deploy") is None  # nothing is recorded before approval

    assert all(outcome.ok for outcome in approvals.approve_all())
    by = {name: tools.usage.get(name) for name in staged}
    assert by["deploy"] is not None
    assert by["deploy"].created_by == "user"
    assert by["triage"] is not None
    assert by["triage"].created_by == "agent"
