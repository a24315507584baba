"""Validation rules for skill writes; each refusal names the rule it enforces."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import yaml

from core.errors import SkillRefused
from core.memory.threats import scan

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
MAX_NAME_CHARS = 64
MAX_SKILL_MD_CHARS = 100_000
MAX_DESCRIPTION_CHARS = 1_024
MAX_FILE_BYTES = 1024 * 1024
ALLOWED_FOLDERS = frozenset({"references", "templates", "scripts", "assets"})
SKILL_FILE = "SKILL.md"

_FRONTMATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def check_name(name: str, *, what: str = "name") -> None:
    if len(name) > MAX_NAME_CHARS:
        raise SkillRefused(f"{what}_length", f"{what} is {len(name)} chars, max {MAX_NAME_CHARS}")
    if not NAME_PATTERN.match(name):
        raise SkillRefused(f"{what}_pattern", f"{what} {name!r} must match {NAME_PATTERN.pattern}")


def check_skill_md(content: str, name: str) -> None:
    """SKILL.md: size cap, YAML frontmatter with a matching name and a bounded description."""
    if len(content) > MAX_SKILL_MD_CHARS:
        raise SkillRefused(
            "skill_md_size", f"SKILL.md is {len(content)} chars, max {MAX_SKILL_MD_CHARS}"
        )
    match = _FRONTMATTER.match(content)
    if match is None:
        raise SkillRefused("frontmatter_missing", "SKILL.md must start with --- YAML frontmatter")
    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError as error:
        raise SkillRefused("frontmatter_yaml", f"frontmatter is not valid YAML: {error}") from None
    if not isinstance(meta, dict):
        raise SkillRefused("frontmatter_yaml", "frontmatter must be a YAML mapping")
    if meta.get("name") != name:
        raise SkillRefused(
            "frontmatter_name", f"frontmatter name {meta.get('name')!r} must equal {name!r}"
        )
    _check_description(meta.get("description"))
    check_threats(content)


def _check_description(description: object) -> None:
    if not isinstance(description, str) or not description.strip():
        raise SkillRefused("description_missing", "frontmatter needs a non-empty description")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillRefused(
            "description_length",
            f"description is {len(description)} chars, max {MAX_DESCRIPTION_CHARS}",
        )


def check_file_content(content: str) -> None:
    size = len(content.encode("utf-8"))
    if size > MAX_FILE_BYTES:
        raise SkillRefused("file_size", f"file is {size} bytes, max {MAX_FILE_BYTES}")
    check_threats(content)


def check_threats(content: str) -> None:
    pattern_id = scan(content)
    if pattern_id is not None:
        raise SkillRefused(f"threat:{pattern_id}", f"content matches threat pattern {pattern_id}")


def supporting_path(skill_dir: Path, file_path: str) -> Path:
    """Resolve ``file_path`` inside ``skill_dir``, refusing anything outside the four folders."""
    pure = PurePosixPath(file_path.replace("\\", "/"))
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", file_path):
        raise SkillRefused("path_absolute", f"file_path {file_path!r} must be relative")
    if ".." in pure.parts:
        raise SkillRefused("path_traversal", f"file_path {file_path!r} must not contain '..'")
    if len(pure.parts) < 2 or pure.parts[0] not in ALLOWED_FOLDERS:
        allowed = ", ".join(sorted(ALLOWED_FOLDERS))
        raise SkillRefused(
            "file_folder", f"file_path {file_path!r} must be a file under one of: {allowed}"
        )
    target = skill_dir.joinpath(*pure.parts)
    if not target.resolve().is_relative_to(skill_dir.resolve()):
        raise SkillRefused(
            "path_symlink", f"file_path {file_path!r} leads out of the skill folder via a link"
        )
    return target
