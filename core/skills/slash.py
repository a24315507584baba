"""``/<skill-name> [args]`` in a chat: load that skill into this turn only.

The skill's SKILL.md is appended to the API copy of the user's message inside a
``<skill-context>`` fence; the transcript keeps what the person typed, and the
stored ``api_content`` keeps the bytes sent, so replays stay identical.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Collection
from datetime import UTC, datetime
from pathlib import Path

from core.skills.library import Skill, load_library
from core.skills.usage import SkillUsage

_SLASH = re.compile(r"^/([a-z0-9][a-z0-9._-]{0,63})(?:@\S+)?(?:\s|$)")
_FENCE_TAG = re.compile(r"<\s*/?\s*skill-context", re.IGNORECASE)


def skill_material(
    skills_dir: Path,
    text: str,
    *,
    platform: str,
    enabled_tools: Collection[str],
    disabled: Collection[str] = (),
) -> tuple[str, str] | None:
    """``(skill name, fenced block)`` when ``text`` starts with ``/<visible skill>``."""
    skill = invoked_skill(
        skills_dir, text, platform=platform, enabled_tools=enabled_tools, disabled=disabled
    )
    if skill is None:
        return None
    body = (skill.path / "SKILL.md").read_text(encoding="utf-8", errors="replace")
    # Neutralise anything that could close the fence early.
    body = _FENCE_TAG.sub(lambda m: m.group(0).replace("<", "&lt;"), body)
    block = (
        f'<skill-context name="{skill.name}">\n'
        f"The user invoked the skill {skill.name!r} for this message; follow it.\n\n"
        f"{body.strip()}\n</skill-context>"
    )
    return skill.name, block


def invoked_skill(
    skills_dir: Path,
    text: str,
    *,
    platform: str,
    enabled_tools: Collection[str],
    disabled: Collection[str] = (),
) -> Skill | None:
    """The visible, unbroken skill ``text``'s ``/<name>`` invokes, or None (blocking)."""
    match = _SLASH.match(text.strip())
    if match is None:
        return None
    library = load_library(
        skills_dir, platform=platform, enabled_tools=enabled_tools, disabled=disabled
    )
    skill = library.get(match.group(1))
    if skill is None or not skill.visible or skill.broken:
        return None
    return skill


def slash_claim(
    skills_dir: Path, disabled: Collection[str], enabled_tools: Callable[[], Collection[str]]
) -> Callable[[str, str], Awaitable[bool]]:
    """Whether ``(text, platform)`` invokes a skill: its ``/word`` is then no unknown command."""

    def claims_blocking(text: str, platform: str) -> bool:
        found = invoked_skill(
            skills_dir, text, platform=platform, enabled_tools=enabled_tools(), disabled=disabled
        )
        return found is not None

    async def claims(text: str, platform: str) -> bool:
        if _SLASH.match(text.strip()) is None:
            return False
        return await asyncio.to_thread(claims_blocking, text, platform)

    return claims


def slash_loader(
    skills_dir: Path, disabled: Collection[str], enabled_tools: Callable[[], Collection[str]]
) -> Callable[[str, str], Awaitable[str | None]]:
    """A loader for the turn loop: the fenced skill for ``(text, platform)``, counted as a use."""
    usage = SkillUsage(skills_dir)

    def load_blocking(text: str, platform: str) -> str | None:
        found = skill_material(
            skills_dir, text, platform=platform, enabled_tools=enabled_tools(), disabled=disabled
        )
        if found is None:
            return None
        usage.record_use(found[0], datetime.now(tz=UTC))
        return found[1]

    async def load(text: str, platform: str) -> str | None:
        # Most messages are not a /skill: decide that without leaving the event loop.
        if _SLASH.match(text.strip()) is None:
            return None
        return await asyncio.to_thread(load_blocking, text, platform)

    return load
