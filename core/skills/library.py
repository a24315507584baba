"""The SKILL.md library: scan ``skills_dir/[<category>/]<name>/SKILL.md`` and parse frontmatter.

Nothing is dropped silently: a skill whose frontmatter is unusable stays in the library with
``problems``, and a skill gated away from this platform or toolset carries ``hidden_reason``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SKILL_FILE = "SKILL.md"
DESCRIPTION_LIMIT = 1024
INDEX_DESCRIPTION_HINT = 60
FENCE = "---"


@dataclass(frozen=True)
class Skill:
    """One installed skill; ``path`` is its folder, ``body`` the SKILL.md text after frontmatter."""

    name: str
    category: str | None
    description: str
    path: Path
    frontmatter: dict[str, Any]
    body: str
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    hidden_reason: str | None = None

    @property
    def visible(self) -> bool:
        return self.hidden_reason is None

    @property
    def broken(self) -> bool:
        return bool(self.problems)


@dataclass(frozen=True)
class Library:
    """Every skill found under ``root``, ordered uncategorised first, then by category and name."""

    root: Path
    skills: tuple[Skill, ...]

    def get(self, name: str) -> Skill | None:
        return next((skill for skill in self.skills if skill.name == name), None)


@dataclass(frozen=True)
class Gate:
    """What decides visibility: the platform, the enabled tools and the disabled skills."""

    platform: str
    enabled_tools: frozenset[str]
    disabled: frozenset[str]


def load_library(
    skills_dir: Path,
    *,
    platform: str,
    enabled_tools: Collection[str],
    disabled: Collection[str] = (),
) -> Library:
    gate = Gate(platform, frozenset(enabled_tools), frozenset(disabled))
    skills = [_load_skill(folder, category, gate) for folder, category in skill_folders(skills_dir)]
    _flag_duplicates(skills)
    return Library(skills_dir, tuple(skills))


def skill_folders(skills_dir: Path) -> list[tuple[Path, str | None]]:
    """Every folder holding a SKILL.md, with its category; dot-folders are skipped."""
    found: list[tuple[Path, str | None]] = []
    for child in _subfolders(skills_dir):
        if (child / SKILL_FILE).is_file():
            found.append((child, None))
            continue
        found.extend((grandchild, child.name) for grandchild in _subfolders(child))
    found = [(folder, category) for folder, category in found if (folder / SKILL_FILE).is_file()]
    return sorted(found, key=lambda item: (item[1] is not None, item[1] or "", item[0].name))


def _subfolders(folder: Path) -> Iterator[Path]:
    if not folder.is_dir():
        return
    for child in sorted(folder.iterdir()):
        if child.is_dir() and not child.name.startswith("."):
            yield child


def _load_skill(folder: Path, category: str | None, gate: Gate) -> Skill:
    problems: list[str] = []
    frontmatter, body = _read(folder / SKILL_FILE, problems)
    name = _name(frontmatter, folder, problems)
    description = _description(frontmatter, problems)
    warnings = []
    if len(description) > INDEX_DESCRIPTION_HINT:
        warnings.append(
            f"description is {len(description)} characters; the index shows it, "
            f"keep it to {INDEX_DESCRIPTION_HINT} or fewer"
        )
    return Skill(
        name=name,
        category=category,
        description=description,
        path=folder,
        frontmatter=frontmatter,
        body=body,
        problems=problems,
        warnings=warnings,
        hidden_reason=_hidden_reason(name, frontmatter, gate, problems),
    )


def _read(path: Path, problems: list[str]) -> tuple[dict[str, Any], str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        problems.append(f"SKILL.md cannot be read: {error}")
        return {}, ""
    return split_frontmatter(text, problems)


def split_frontmatter(text: str, problems: list[str]) -> tuple[dict[str, Any], str]:
    """Parse the YAML between the leading ``---`` lines; record why when it cannot be used."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != FENCE:
        problems.append("no frontmatter: SKILL.md must start with a '---' line")
        return {}, text
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == FENCE), None)
    if end is None:
        problems.append("frontmatter is not closed by a '---' line")
        return {}, text
    body = "".join(lines[end + 1 :])
    try:
        parsed = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as error:
        problems.append(f"frontmatter is not valid YAML: {_first_line(error)}")
        return {}, body
    if not isinstance(parsed, dict):
        problems.append("frontmatter is not a YAML mapping")
        return {}, body
    return parsed, body


def _first_line(error: yaml.YAMLError) -> str:
    return str(error).strip().splitlines()[0]


def _name(frontmatter: dict[str, Any], folder: Path, problems: list[str]) -> str:
    name = frontmatter.get("name")
    if name is not None and not isinstance(name, str):
        problems.append(f"name must be a string, YAML read {name!r}; quote it")
        return folder.name
    if not isinstance(name, str) or not name.strip():
        if frontmatter:
            problems.append("frontmatter has no name")
        return folder.name
    if name != folder.name:
        problems.append(f"name '{name}' does not match its folder '{folder.name}'")
    return name


def _description(frontmatter: dict[str, Any], problems: list[str]) -> str:
    description = frontmatter.get("description")
    if not isinstance(description, str) or not description.strip():
        if frontmatter:
            problems.append("frontmatter has no description")
        return ""
    description = " ".join(description.split())
    if len(description) > DESCRIPTION_LIMIT:
        problems.append(
            f"description is {len(description)} characters; the limit is {DESCRIPTION_LIMIT:,}"
        )
    return description


def _hidden_reason(
    name: str, frontmatter: dict[str, Any], gate: Gate, problems: list[str]
) -> str | None:
    if name in gate.disabled:
        return "disabled"
    platforms = _strings(frontmatter, "platforms", problems)
    if platforms and gate.platform not in platforms:
        return f"platform '{gate.platform}' is not in platforms [{', '.join(platforms)}]"
    missing = [
        tool
        for tool in _strings(frontmatter, "requires_tools", problems)
        if tool not in gate.enabled_tools
    ]
    if missing:
        return f"requires tools that are not enabled: {', '.join(missing)}"
    primary = [
        tool
        for tool in _strings(frontmatter, "fallback_for_tools", problems)
        if tool in gate.enabled_tools
    ]
    if primary:
        return f"fallback for tools that are enabled: {', '.join(primary)}"
    return None


def _strings(frontmatter: dict[str, Any], key: str, problems: list[str]) -> list[str]:
    value = frontmatter.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    problems.append(f"'{key}' must be a list of strings")
    return []


def _flag_duplicates(skills: list[Skill]) -> None:
    counts = Counter(skill.name for skill in skills)
    for skill in skills:
        if counts[skill.name] > 1:
            skill.problems.append(f"name '{skill.name}' is used by more than one skill")
