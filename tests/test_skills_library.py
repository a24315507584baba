"""The SKILL.md library: frontmatter parsing, gating with recorded reasons, layout scanning."""

from __future__ import annotations

from pathlib import Path

from core.skills.library import Library, Skill, load_library

TOOLS = ("skill_view", "terminal")


def write_skill(root: Path, folder: str, frontmatter: str, body: str = "Steps.\n") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{frontmatter}---\n{body}", encoding="utf-8")
    return path


def simple(name: str, description: str = "Do the thing", extra: str = "") -> str:
    return f"name: {name}\ndescription: {description}\n{extra}"


def load(root: Path, disabled: tuple[str, ...] = ()) -> Library:
    return load_library(root, platform="telegram", enabled_tools=TOOLS, disabled=disabled)


def only(library: Library) -> Skill:
    assert len(library.skills) == 1
    return library.skills[0]


def test_good_skill_is_parsed(tmp_path: Path) -> None:
    extra = "version: 1.0.0\nmetadata:\n  tags: [git, release]\n"
    write_skill(tmp_path, "release", simple("release", "Cut a release", extra), "# Release\n")
    skill = only(load(tmp_path))
    assert (skill.name, skill.category, skill.description) == ("release", None, "Cut a release")
    assert skill.path == tmp_path / "release"
    assert skill.frontmatter["metadata"] == {"tags": ["git", "release"]}
    assert skill.body == "# Release\n"
    assert (skill.problems, skill.warnings, skill.hidden_reason) == ([], [], None)
    assert skill.visible
    assert not skill.broken


def test_broken_yaml_is_kept_with_a_problem(tmp_path: Path) -> None:
    write_skill(tmp_path, "oops", "name: oops\ndescription: [unclosed\n")
    skill = only(load(tmp_path))
    assert skill.name == "oops"
    assert skill.visible
    assert len(skill.problems) == 1
    assert skill.problems[0].startswith("frontmatter is not valid YAML: ")


def test_missing_frontmatter_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "SKILL.md").write_text("# Just text\n", encoding="utf-8")
    skill = only(load(tmp_path))
    assert skill.problems == ["no frontmatter: SKILL.md must start with a '---' line"]
    assert skill.body == "# Just text\n"


def test_missing_description_is_a_problem(tmp_path: Path) -> None:
    write_skill(tmp_path, "bare", "name: bare\n")
    skill = only(load(tmp_path))
    assert skill.problems == ["frontmatter has no description"]
    assert skill.description == ""


def test_long_description_warns_and_too_long_is_a_problem(tmp_path: Path) -> None:
    write_skill(tmp_path, "wordy", simple("wordy", "x" * 61))
    write_skill(tmp_path, "huge", simple("huge", "y" * 1025))
    library = load(tmp_path)
    wordy, huge = library.get("wordy"), library.get("huge")
    assert wordy is not None
    assert huge is not None
    assert wordy.problems == []
    assert wordy.warnings == [
        "description is 61 characters; the index shows it, keep it to 60 or fewer"
    ]
    assert huge.problems == ["description is 1025 characters; the limit is 1,024"]


def test_name_must_match_folder(tmp_path: Path) -> None:
    write_skill(tmp_path, "folder", simple("other"))
    assert only(load(tmp_path)).problems == ["name 'other' does not match its folder 'folder'"]


def test_non_string_name_is_a_problem(tmp_path: Path) -> None:
    write_skill(tmp_path, "off", simple("off"))  # YAML 1.1 reads a bare `off` as False
    skill = only(load(tmp_path))
    assert skill.name == "off"
    assert skill.problems == ["name must be a string, YAML read False; quote it"]


def test_platform_gated_skill_is_hidden_with_reason(tmp_path: Path) -> None:
    write_skill(tmp_path, "notes", simple("notes", extra="platforms: [discord, slack]\n"))
    write_skill(tmp_path, "chat", simple("chat", extra="platforms: [telegram]\n"))
    library = load(tmp_path)
    chat, notes = library.get("chat"), library.get("notes")
    assert chat is not None
    assert notes is not None
    assert chat.visible
    assert notes.hidden_reason == "platform 'telegram' is not in platforms [discord, slack]"
    assert notes.description == "Do the thing"


def test_requires_tools_hides_when_a_tool_is_missing(tmp_path: Path) -> None:
    write_skill(tmp_path, "web", simple("web", extra="requires_tools: [terminal, browser]\n"))
    write_skill(tmp_path, "shell", simple("shell", extra="requires_tools: [terminal]\n"))
    library = load(tmp_path)
    web, shell = library.get("web"), library.get("shell")
    assert web is not None
    assert shell is not None
    assert web.hidden_reason == "requires tools that are not enabled: browser"
    assert shell.visible


def test_fallback_for_tools_hides_when_the_primary_exists(tmp_path: Path) -> None:
    write_skill(tmp_path, "curl", simple("curl", extra="fallback_for_tools: [terminal]\n"))
    write_skill(tmp_path, "search", simple("search", extra="fallback_for_tools: [web_search]\n"))
    library = load(tmp_path)
    curl, search = library.get("curl"), library.get("search")
    assert curl is not None
    assert search is not None
    assert curl.hidden_reason == "fallback for tools that are enabled: terminal"
    assert search.visible


def test_disabled_skill_is_hidden(tmp_path: Path) -> None:
    write_skill(tmp_path, "noisy", simple("noisy"))
    assert only(load(tmp_path, disabled=("noisy",))).hidden_reason == "disabled"


def test_badly_typed_gate_field_is_a_problem(tmp_path: Path) -> None:
    write_skill(tmp_path, "odd", simple("odd", extra="platforms: {telegram: true}\n"))
    skill = only(load(tmp_path))
    assert skill.problems == ["'platforms' must be a list of strings"]
    assert skill.visible


def test_categories_and_dot_folders(tmp_path: Path) -> None:
    write_skill(tmp_path, "top", simple("top"))
    write_skill(tmp_path, "research/arxiv", simple("arxiv"))
    write_skill(tmp_path, "devops/deploy", simple("deploy"))
    write_skill(tmp_path, ".archive/old", simple("old"))
    write_skill(tmp_path, "research/.draft", simple(".draft"))
    (tmp_path / "research" / "notes.txt").write_text("not a skill", encoding="utf-8")
    library = load(tmp_path)
    found = [(skill.category, skill.name) for skill in library.skills]
    assert found == [(None, "top"), ("devops", "deploy"), ("research", "arxiv")]


def test_duplicate_names_are_problems(tmp_path: Path) -> None:
    write_skill(tmp_path, "a/same", simple("same"))
    write_skill(tmp_path, "b/same", simple("same"))
    problems = [skill.problems for skill in load(tmp_path).skills]
    assert problems == [["name 'same' is used by more than one skill"]] * 2


def test_missing_folder_is_an_empty_library(tmp_path: Path) -> None:
    assert load(tmp_path / "absent").skills == ()
