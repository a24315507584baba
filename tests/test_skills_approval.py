"""Skill write approval: batches staged with a diff, replayed on approve, dropped on reject."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.skills.approval import SkillApprovals
from core.skills.store import SkillStore
from core.skills.usage import SkillUsage
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway

SKILL = "---\nname: {name}\ndescription: Do {name} the careful way\n---\n1. Check.\n2. Ship.\n"


@pytest.fixture
def approvals(tmp_path: Path) -> SkillApprovals:
    return SkillApprovals(tmp_path, SkillStore(tmp_path / "skills"))


def create_op(name: str) -> dict[str, Any]:
    return {"action": "create", "name": name, "content": SKILL.format(name=name)}


def patch_op(name: str, old: str, new: str) -> dict[str, Any]:
    return {"action": "patch", "name": name, "old_string": old, "new_string": new}


def stage(approvals: SkillApprovals, *operations: dict[str, Any]) -> str:
    payload = approvals.stage({"operations": list(operations)}, "foreground")
    assert payload["success"] is True, payload
    assert payload["staged"] is True
    pending_id: str = payload["pending_id"]
    return pending_id


def install(approvals: SkillApprovals, name: str) -> Path:
    folder = approvals.skills_dir / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL.format(name=name), encoding="utf-8")
    return folder / "SKILL.md"


def test_a_staged_batch_is_a_json_file_and_nothing_is_written(approvals: SkillApprovals) -> None:
    pending_id = stage(approvals, create_op("deploy"))
    record = json.loads((approvals.folder / f"{pending_id}.json").read_text())
    (write,) = approvals.list()
    assert record["operations"] == [create_op("deploy")]
    assert write.skills == ("deploy",)
    assert "create deploy" in write.summary
    assert not (approvals.skills_dir / "deploy").exists()
    assert "+++ b/deploy/SKILL.md" in approvals.diff(pending_id)
    assert "+2. Ship." in approvals.diff(pending_id)


def test_the_diff_shows_a_patch_and_a_new_supporting_file(approvals: SkillApprovals) -> None:
    skill_md = install(approvals, "deploy")
    write_file = {
        "action": "write_file",
        "name": "deploy",
        "file_path": "references/hosts.md",
        "file_content": "web-1\n",
    }
    pending_id = stage(approvals, patch_op("deploy", "2. Ship.", "2. Ship it."), write_file)
    diff = approvals.diff(pending_id)
    assert "-2. Ship.\n+2. Ship it.\n" in diff
    assert "--- /dev/null\n+++ b/deploy/references/hosts.md" in diff
    assert skill_md.read_text() == SKILL.format(name="deploy")


def test_an_invalid_batch_is_answered_like_a_real_run_and_not_staged(
    approvals: SkillApprovals,
) -> None:
    install(approvals, "deploy")
    payload = approvals.stage({"operations": [patch_op("deploy", "nowhere", "x")]}, "foreground")
    assert payload["success"] is False
    assert payload["error"] == (
        "operations[0] (patch): old_string does not occur in the file [rule: patch_not_found]"
    )
    assert approvals.list() == []


def test_approve_writes_it_records_provenance_and_clears_it(approvals: SkillApprovals) -> None:
    payload = approvals.stage({"operations": [create_op("triage")]}, "background_review")
    outcome = approvals.approve(payload["pending_id"])
    assert outcome.ok, outcome.message
    assert (approvals.skills_dir / "triage" / "SKILL.md").read_text() == SKILL.format(name="triage")
    record = SkillUsage(approvals.skills_dir).get("triage")
    assert record is not None
    assert record.created_by == "agent"
    assert approvals.list() == []


def test_a_batch_that_became_invalid_stays_pending_with_the_reason(
    approvals: SkillApprovals,
) -> None:
    skill_md = install(approvals, "deploy")
    pending_id = stage(approvals, patch_op("deploy", "2. Ship.", "2. Ship it."))
    skill_md.write_text(SKILL.format(name="deploy").replace("2. Ship.", "2. Release."))
    outcome = approvals.approve(pending_id)
    (write,) = approvals.list()
    assert not outcome.ok
    assert "old_string does not occur" in outcome.message
    assert write.last_refusal == outcome.message
    assert "2. Release." in skill_md.read_text()


def test_reject_removes_it_unapplied_and_unknown_ids_are_refused(
    approvals: SkillApprovals,
) -> None:
    pending_id = stage(approvals, create_op("deploy"))
    assert approvals.reject(pending_id) is True
    assert approvals.reject(pending_id) is False
    assert approvals.reject("../../etc") is False
    assert not approvals.approve("deadbeef").ok
    assert approvals.list() == []
    assert not (approvals.skills_dir / "deploy").exists()


def test_approve_all_in_order_and_reject_all(approvals: SkillApprovals) -> None:
    install(approvals, "deploy")
    first = stage(approvals, create_op("triage"))
    second = stage(approvals, patch_op("deploy", "2. Ship.", "2. Ship it."))
    outcomes = approvals.approve_all()
    assert [(o.id, o.ok) for o in outcomes] == [(first, True), (second, True)]
    assert "2. Ship it." in (approvals.skills_dir / "deploy" / "SKILL.md").read_text()
    assert (approvals.skills_dir / "triage" / "SKILL.md").is_file()
    stage(approvals, create_op("a"))
    stage(approvals, create_op("b"))
    assert approvals.reject_all() == 2
    assert approvals.list() == []


def reply_text(response: httpx.Response) -> str:
    replies = response.json()["replies"]
    assert len(replies) == 1
    text: str = replies[0]["text"]
    return text


async def test_with_write_approval_a_skill_waits_for_skills_approve(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    config = "skills:\n  write_approval: true\nwebhook:\n  owners: [u1]\n"
    (home / "config.yaml").write_text(config, encoding="utf-8")
    fake_openai.reply_tool_call("skill_manage", {"operations": [create_op("release-notes")]})
    fake_openai.reply_text("Staged it for approval.")
    skill_md = home / "skills" / "release-notes" / "SKILL.md"
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("save how we write release notes as a skill")
        on_disk_before = skill_md.exists()
        listed = reply_text(await gw.say("/skills pending"))
        (write,) = SkillApprovals(home, SkillStore(home / "skills")).list()
        diff = reply_text(await gw.say(f"/skills diff {write.id}"))
        help_text = reply_text(await gw.say("/help"))
        approved = reply_text(await gw.say(f"/skills approve {write.id}"))
        overview = reply_text(await gw.say("/skills"))

    staged = json.loads(fake_openai.requests[1]["messages"][-1]["content"])
    assert staged["staged"] is True
    assert staged["pending_id"] == write.id
    assert not on_disk_before
    assert write.id in listed
    assert "create release-notes" in listed
    assert "+description: Do release-notes the careful way" in diff
    assert "/skills" in help_text
    assert f"Approved {write.id}" in approved
    assert skill_md.read_text() == SKILL.format(name="release-notes")
    assert "- release-notes: Do release-notes the careful way" in overview
    assert "Write approval: on, 0 pending" in overview


@pytest.mark.parametrize(
    ("config", "approver"),
    [
        ("skills:\n  write_approval: true\nwebhook:\n  owners: [owner]\n", "owner"),
        ('skills:\n  write_approval: true\n  approvers: ["webhook:lead"]\n', "lead"),
    ],
)
async def test_only_owners_or_skills_approvers_approve_skill_writes(
    home: Path, fake_openai: FakeOpenAIServer, config: str, approver: str
) -> None:
    (home / "config.yaml").write_text(config, encoding="utf-8")
    fake_openai.reply_tool_call("skill_manage", {"operations": [create_op("release-notes")]})
    fake_openai.reply_text("Staged it for approval.")
    skill_md = home / "skills" / "release-notes" / "SKILL.md"
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("save how we write release notes as a skill", user_id="guest")
        refused = reply_text(await gw.say("/skills approve all", chat_id="c7", user_id="guest"))
        written_after_refusal = skill_md.exists()
        approved = reply_text(await gw.say("/skills approve all", chat_id="c2", user_id=approver))

    assert "Only the operator (skills.approvers" in refused
    assert not written_after_refusal
    assert "Approved" in approved
    assert skill_md.exists()
