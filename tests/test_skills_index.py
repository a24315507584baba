"""The mandatory skills index, its LRU, its disk snapshot, and the doctor report."""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from pathlib import Path

import pytest

from core.skills.doctor import DoctorLine, diagnose, format_report
from core.skills.index import SNAPSHOT_NAME, SkillsIndexCache, render_index
from core.skills.library import Library, load_library
from tests.test_skills_library import simple, write_skill

TOOLS = ("skill_view", "terminal")

EXPECTED = """\
## Skills (mandatory)

Before replying, scan the skills below. If a skill matches or is even partially relevant \
to your task, you MUST load it with skill_view(name) and follow its instructions. Err on the \
side of loading — it is always better to have context you don't need than to miss critical \
steps, pitfalls, or established workflows.

- broken: [broken: frontmatter has no description]
- zeta: Last uncategorised

### devops
- deploy: Ship the service

### research
- arxiv: Find papers
- citations: Format references
"""


class CountingLoader:
    """The real loader, counting how often the tree is actually read."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(
        self,
        skills_dir: Path,
        *,
        platform: str,
        enabled_tools: Collection[str],
        disabled: Collection[str] = (),
    ) -> Library:
        self.calls += 1
        return load_library(
            skills_dir, platform=platform, enabled_tools=enabled_tools, disabled=disabled
        )


def small_library(root: Path) -> None:
    write_skill(root, "zeta", simple("zeta", "Last uncategorised"))
    write_skill(root, "broken", "name: broken\n")
    write_skill(root, "research/citations", simple("citations", "Format references"))
    write_skill(root, "research/arxiv", simple("arxiv", "Find papers"))
    write_skill(root, "devops/deploy", simple("deploy", "Ship the service"))
    write_skill(root, "devops/mac", simple("mac", extra="platforms: [macos]\n"))


def test_render_index_exact_text(tmp_path: Path) -> None:
    small_library(tmp_path)
    library = load_library(tmp_path, platform="telegram", enabled_tools=TOOLS)
    assert render_index(library) == EXPECTED


def test_render_index_is_empty_without_visible_skills(tmp_path: Path) -> None:
    write_skill(tmp_path, "off", simple("off"))
    library = load_library(tmp_path, platform="telegram", enabled_tools=TOOLS, disabled={"off"})
    assert render_index(library) == ""
    assert render_index(load_library(tmp_path / "none", platform="x", enabled_tools=())) == ""


def test_lru_hit_does_not_reload(tmp_path: Path) -> None:
    small_library(tmp_path)
    loader = CountingLoader()
    cache = SkillsIndexCache(loader=loader)
    first = cache.index_for(tmp_path, "telegram", ["terminal", "skill_view"])
    second = cache.index_for(tmp_path, "telegram", ["skill_view", "terminal"])
    assert first == second == EXPECTED
    assert loader.calls == 1
    cache.index_for(tmp_path, "discord", TOOLS)
    assert loader.calls == 2


def test_lru_evicts_the_least_recently_used(tmp_path: Path) -> None:
    small_library(tmp_path)
    loader = CountingLoader()
    cache = SkillsIndexCache(max_entries=1, loader=loader)
    (tmp_path / SNAPSHOT_NAME).unlink(missing_ok=True)
    cache.index_for(tmp_path, "telegram", TOOLS)
    cache.index_for(tmp_path, "discord", TOOLS)
    cache.index_for(tmp_path, "telegram", TOOLS)
    # Evicted from memory but still served by the snapshot, so only two real loads.
    assert loader.calls == 2


def test_snapshot_is_reused_by_a_new_cache(tmp_path: Path) -> None:
    small_library(tmp_path)
    SkillsIndexCache().index_for(tmp_path, "telegram", TOOLS)
    snapshot = json.loads((tmp_path / SNAPSHOT_NAME).read_text(encoding="utf-8"))
    assert sorted(snapshot["manifest"]) == [
        "broken/SKILL.md",
        "devops/deploy/SKILL.md",
        "devops/mac/SKILL.md",
        "research/arxiv/SKILL.md",
        "research/citations/SKILL.md",
        "zeta/SKILL.md",
    ]
    loader = CountingLoader()
    assert SkillsIndexCache(loader=loader).index_for(tmp_path, "telegram", TOOLS) == EXPECTED
    assert loader.calls == 0


def test_snapshot_holds_one_index_per_key(tmp_path: Path) -> None:
    small_library(tmp_path)
    SkillsIndexCache().index_for(tmp_path, "telegram", TOOLS)
    SkillsIndexCache().index_for(tmp_path, "macos", TOOLS, ["zeta"])
    loader = CountingLoader()
    restarted = SkillsIndexCache(loader=loader)
    assert restarted.index_for(tmp_path, "telegram", TOOLS) == EXPECTED
    assert "- mac: Do the thing" in restarted.index_for(tmp_path, "macos", TOOLS, ["zeta"])
    assert loader.calls == 0


def test_changed_skill_file_invalidates_the_snapshot(tmp_path: Path) -> None:
    small_library(tmp_path)
    SkillsIndexCache().index_for(tmp_path, "telegram", TOOLS)
    path = write_skill(tmp_path, "zeta", simple("zeta", "Rewritten description"))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    loader = CountingLoader()
    text = SkillsIndexCache(loader=loader).index_for(tmp_path, "telegram", TOOLS)
    assert "- zeta: Rewritten description" in text
    assert loader.calls == 1


def test_added_skill_invalidates_the_snapshot(tmp_path: Path) -> None:
    small_library(tmp_path)
    SkillsIndexCache().index_for(tmp_path, "telegram", TOOLS)
    write_skill(tmp_path, "fresh", simple("fresh", "Brand new"))
    text = SkillsIndexCache().index_for(tmp_path, "telegram", TOOLS)
    assert "- fresh: Brand new" in text


def test_corrupt_snapshot_is_rebuilt(tmp_path: Path) -> None:
    small_library(tmp_path)
    (tmp_path / SNAPSHOT_NAME).write_text("{not json", encoding="utf-8")
    assert SkillsIndexCache().index_for(tmp_path, "telegram", TOOLS) == EXPECTED
    json.loads((tmp_path / SNAPSHOT_NAME).read_text(encoding="utf-8"))


def test_invalidate_rebuilds_memory_and_disk_at_once(tmp_path: Path) -> None:
    small_library(tmp_path)
    loader = CountingLoader()
    cache = SkillsIndexCache(loader=loader)
    cache.index_for(tmp_path, "telegram", TOOLS)
    write_skill(tmp_path, "fresh", simple("fresh", "Brand new"))
    cache.invalidate()
    assert loader.calls == 2  # re-rendered once, now
    assert "- fresh: Brand new" in cache.index_for(tmp_path, "telegram", TOOLS)
    assert loader.calls == 2
    restarted = CountingLoader()  # the rewritten snapshot is current: a new process reads it
    text = SkillsIndexCache(loader=restarted).index_for(tmp_path, "telegram", TOOLS)
    assert "- fresh: Brand new" in text
    assert restarted.calls == 0


def test_invalidate_with_a_folder_it_never_served(tmp_path: Path) -> None:
    small_library(tmp_path)
    SkillsIndexCache().index_for(tmp_path, "telegram", TOOLS)
    SkillsIndexCache().index_for(tmp_path, "macos", TOOLS, ["zeta"])
    write_skill(tmp_path, "fresh", simple("fresh", "Brand new"))
    SkillsIndexCache().invalidate(tmp_path)  # another process's writer: every slot rebuilt
    snapshot = json.loads((tmp_path / SNAPSHOT_NAME).read_text(encoding="utf-8"))
    assert len(snapshot["indexes"]) == 2
    assert all("- fresh: Brand new" in text for text in snapshot["indexes"].values())
    assert "fresh/SKILL.md" in snapshot["manifest"]


def test_invalidate_of_a_folder_that_is_gone_leaves_no_snapshot(tmp_path: Path) -> None:
    SkillsIndexCache().invalidate(tmp_path / "missing")
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[]",
        '{"version": 1, "manifest": {}, "indexes": {"x": 3}}',
        '{"version": 1, "indexes": {}}',
        '{"version": 99, "manifest": {}, "indexes": {}}',
    ],
)
def test_an_unreadable_snapshot_is_ignored_and_rewritten(tmp_path: Path, content: str) -> None:
    small_library(tmp_path)
    (tmp_path / SNAPSHOT_NAME).write_text(content, encoding="utf-8")
    loader = CountingLoader()
    assert SkillsIndexCache(loader=loader).index_for(tmp_path, "telegram", TOOLS) == EXPECTED
    assert loader.calls == 1
    snapshot = json.loads((tmp_path / SNAPSHOT_NAME).read_text(encoding="utf-8"))
    assert list(snapshot["indexes"].values()) == [EXPECTED]
    assert SkillsIndexCache(loader=loader).index_for(tmp_path, "telegram", TOOLS) == EXPECTED
    assert loader.calls == 1  # the rewritten snapshot is used


def test_doctor_explains_every_skill(tmp_path: Path) -> None:
    small_library(tmp_path)
    write_skill(tmp_path, "wordy", simple("wordy", "w" * 70))
    write_skill(tmp_path, "devops/quiet", simple("quiet"))
    lines = diagnose(tmp_path, "telegram", TOOLS, ["quiet"])
    assert lines[0] == DoctorLine("broken", None, "broken", ("frontmatter has no description",), ())
    assert format_report(lines) == (
        "8 skills: 5 visible, 2 hidden, 1 broken\n"
        "broken   broken (frontmatter has no description)\n"
        "visible  wordy\n"
        "         warning: description is 70 characters; the index shows it, "
        "keep it to 60 or fewer\n"
        "visible  zeta\n"
        "visible  devops/deploy\n"
        "hidden   devops/mac (platform 'telegram' is not in platforms [macos])\n"
        "hidden   devops/quiet (disabled)\n"
        "visible  research/arxiv\n"
        "visible  research/citations\n"
    )


def test_doctor_on_an_empty_folder(tmp_path: Path) -> None:
    assert format_report(diagnose(tmp_path, "telegram", TOOLS)) == "no skills installed\n"
