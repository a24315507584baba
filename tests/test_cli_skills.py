"""``chatgate skills`` through the real console script."""

from __future__ import annotations

import json
from pathlib import Path

from core.skills.approval import SkillApprovals
from core.skills.store import SkillStore
from tests.test_cli import chatgate


def approvals(home: Path) -> SkillApprovals:
    return SkillApprovals(home, SkillStore(home / "skills"))


def write_skill(home: Path, folder: str, text: str) -> Path:
    path = home / "skills" / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path.parent


def skill_text(name: str, description: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n# {name}\nSteps.\n"


def install(home: Path) -> None:
    write_skill(home, "devops/deploy", skill_text("deploy", "Ship the service"))
    write_skill(home, "imessage", skill_text("imessage", "Texting", "platforms: [imessage]\n"))
    write_skill(home, "broken", "---\nname: broken\n---\nno description\n")


def usage(home: Path) -> dict[str, dict[str, object]]:
    data: dict[str, dict[str, object]] = json.loads(
        (home / "skills" / ".usage.json").read_text(encoding="utf-8")
    )
    return data


def test_list_shows_visible_hidden_and_broken_with_reasons(home: Path) -> None:
    install(home)

    result = chatgate("skills", "list")

    assert result.returncode == 0, result.stderr
    rows = {line.split()[1]: line for line in result.stdout.splitlines() if "│" in line[:3]}
    assert "visible" in rows["deploy"]
    assert "Ship the service" in rows["deploy"]
    assert "devops" in rows["deploy"]
    assert "hidden (platform 'webhook' is not in platforms [imessage])" in rows["imessage"]
    assert "broken (frontmatter has no description)" in rows["broken"]


def test_list_for_another_platform_shows_the_gated_skill(home: Path) -> None:
    install(home)

    result = chatgate("skills", "list", "--platform", "imessage")

    row = next(line for line in result.stdout.splitlines() if " imessage " in line)
    assert "visible" in row


def test_list_without_skills(home: Path) -> None:
    result = chatgate("skills", "list")

    assert result.returncode == 0, result.stderr
    assert "no skills installed" in result.stdout


def test_view_prints_skill_md_and_supporting_files(home: Path) -> None:
    folder = write_skill(home, "deploy", skill_text("deploy", "Ship [bold]it[/bold]"))
    (folder / "references").mkdir()
    (folder / "references" / "api.md").write_text("the [red]api[/red]\n", encoding="utf-8")

    whole = chatgate("skills", "view", "deploy")
    one = chatgate("skills", "view", "deploy", "--file", "references/api.md")

    assert whole.returncode == 0, whole.stderr
    assert "description: Ship [bold]it[/bold]" in whole.stdout  # markup is printed as text
    assert "references/api.md" in whole.stdout
    assert one.returncode == 0, one.stderr
    assert one.stdout.strip() == "the [red]api[/red]"


def test_view_refuses_unknown_skill_and_files(home: Path) -> None:
    write_skill(home, "deploy", skill_text("deploy", "Ship it"))

    assert chatgate("skills", "view", "nope").returncode == 1
    missing = chatgate("skills", "view", "deploy", "--file", "references/none.md")
    outside = chatgate("skills", "view", "deploy", "--file", "../../config.yaml")
    assert missing.returncode == 1
    assert outside.returncode == 1
    assert "'..'" in outside.stderr


def test_pin_and_unpin_persist_in_usage(home: Path) -> None:
    write_skill(home, "deploy", skill_text("deploy", "Ship it"))

    assert chatgate("skills", "pin", "deploy").returncode == 0
    assert usage(home)["deploy"]["pinned"] is True
    listed = chatgate("skills", "list").stdout
    assert "yes" in next(line for line in listed.splitlines() if "deploy" in line)

    assert chatgate("skills", "unpin", "deploy").returncode == 0
    assert usage(home)["deploy"]["pinned"] is False


def test_unknown_names_exit_1(home: Path) -> None:
    for command in ("pin", "unpin", "adopt"):
        result = chatgate("skills", command, "nope")
        assert result.returncode == 1, command
        assert "no skill named 'nope'" in result.stderr
    assert not (home / "skills" / ".usage.json").exists()


def test_adopt_hands_a_user_skill_to_the_curator(home: Path) -> None:
    write_skill(home, "deploy", skill_text("deploy", "Ship it"))
    assert chatgate("skills", "pin", "deploy").returncode == 0
    assert usage(home)["deploy"]["created_by"] == "user"

    result = chatgate("skills", "adopt", "deploy")

    assert result.returncode == 0, result.stderr
    record = usage(home)["deploy"]
    assert record["created_by"] == "agent"
    assert record["pinned"] is True
    assert "already curated" in chatgate("skills", "adopt", "deploy").stdout


def test_doctor_explains_gated_and_broken_skills(home: Path) -> None:
    install(home)

    result = chatgate("skills", "doctor")

    assert result.returncode == 0, result.stderr
    assert "3 skills: 1 visible, 1 hidden, 1 broken" in result.stdout
    assert "hidden   imessage (platform 'webhook' is not in platforms [imessage])" in result.stdout
    assert "broken   broken (frontmatter has no description)" in result.stdout
    assert "visible  devops/deploy" in result.stdout


def test_doctor_honours_disabled_skills_and_platform(home: Path) -> None:
    install(home)
    (home / "config.yaml").write_text("skills:\n  disabled: [deploy]\n", encoding="utf-8")

    result = chatgate("skills", "doctor", "--platform", "imessage")

    assert result.returncode == 0, result.stderr
    assert "hidden   devops/deploy (disabled)" in result.stdout
    assert "visible  imessage" in result.stdout


def stage_create(home: Path, name: str) -> str:
    operation = {"action": "create", "name": name, "content": skill_text(name, "Staged")}
    answer = approvals(home).stage({"operations": [operation]}, "foreground")
    assert answer["success"], answer
    return str(answer["pending_id"])


def test_pending_diff_and_approve(home: Path) -> None:
    pending_id = stage_create(home, "staged")

    listed = chatgate("skills", "pending")
    shown = chatgate("skills", "diff", pending_id)
    approved = chatgate("skills", "approve", pending_id)

    assert pending_id in listed.stdout
    assert "[staged]" in listed.stdout
    assert shown.returncode == 0, shown.stderr
    assert "+description: Staged" in shown.stdout
    assert approved.returncode == 0, approved.stderr
    assert (home / "skills" / "staged" / "SKILL.md").is_file()
    assert "no skill writes are pending" in chatgate("skills", "pending").stdout


def test_refused_approval_exits_1_and_stays_pending(home: Path) -> None:
    pending_id = stage_create(home, "twice")
    write_skill(home, "twice", skill_text("twice", "Already here"))

    result = chatgate("skills", "approve", "all")

    assert result.returncode == 1
    assert f"refused {pending_id}" in result.stderr
    assert pending_id in chatgate("skills", "pending").stdout


def test_reject_one_and_all(home: Path) -> None:
    first, _ = stage_create(home, "one"), stage_create(home, "two")

    assert chatgate("skills", "reject", first).returncode == 0
    everything = chatgate("skills", "reject", "all")

    assert "rejected 1 pending skill writes" in everything.stdout
    assert approvals(home).list() == []


def test_unknown_pending_ids_exit_1(home: Path) -> None:
    for command in ("diff", "approve", "reject"):
        result = chatgate("skills", command, "deadbeef")
        assert result.returncode == 1, command
        assert "no pending skill write 'deadbeef'" in result.stderr
