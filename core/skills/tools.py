"""The three skill tools the model sees: ``skills_list``, ``skill_view``, ``skill_manage``.

Discovery goes through the same library the index is built from, so a skill the
model cannot see is never offered, and every write goes through the ``SkillStore``,
which clears its index cache so the next session's index shows it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.clock import Clock
from core.errors import SkillRefused
from core.models.base import ToolSpec
from core.skills.approval import SkillApprovals
from core.skills.library import Library
from core.skills.provenance import record_results
from core.skills.store import SkillStore
from core.skills.usage import SkillUsage
from core.skills.validate import SKILL_FILE, supporting_path
from core.tools import ToolContext

SUPPORT_FOLDERS = ("references", "templates", "scripts", "assets")
SKILL_TOOL_NAMES = ("skills_list", "skill_view", "skill_manage")

LIST_SPEC = ToolSpec(
    name="skills_list",
    description="List the skills you can load: name, description and category.",
    parameters={
        "type": "object",
        "properties": {"category": {"type": "string", "description": "only this category"}},
    },
)
VIEW_SPEC = ToolSpec(
    name="skill_view",
    description=(
        "Load a skill: its SKILL.md and the list of its supporting files, or one supporting "
        "file with `path` (e.g. references/api.md)."
    ),
    parameters={
        "type": "object",
        "properties": {"name": {"type": "string"}, "path": {"type": "string"}},
        "required": ["name"],
    },
)
MANAGE_SPEC = ToolSpec(
    name="skill_manage",
    description=(
        "Create and refine skills (reusable procedures). operations: a list of "
        "{action: create|patch|edit|delete|write_file|remove_file, name, category?, content?, "
        "old_string?, new_string?, replace_all?, file_path?, file_content?}, applied all or "
        "nothing; delete must be alone. SKILL.md needs YAML frontmatter with name and "
        "description."
    ),
    parameters={
        "type": "object",
        "properties": {
            "operations": {"type": "array", "items": {"type": "object"}},
            "action": {"type": "string"},
            "name": {"type": "string"},
        },
    },
)


class SkillTools:
    """The skills of one store as tools, and the context each tool call brings."""

    def __init__(
        self,
        skills: SkillStore,
        *,
        disabled: Collection[str] = (),
        approvals: SkillApprovals | None = None,
        clock: Clock | None = None,
        record_views: bool = True,
    ) -> None:
        """With ``approvals``, every ``skill_manage`` batch is staged instead of written.

        ``record_views=False`` is for the curator: its own reading must not count as use,
        or every skill it surveys would look active again.
        """
        self._skills = skills
        self.usage = SkillUsage(skills.skills_dir)
        self.approvals = approvals
        self._disabled = frozenset(disabled)
        self._clock = clock
        self._record_views = record_views

    def library(self, platform: str, enabled_tools: Collection[str]) -> Library:
        return self._skills.library(platform, enabled_tools, self._disabled)

    def index(self, platform: str, enabled_tools: Collection[str]) -> str:
        """The ``## Skills (mandatory)`` block for a new session's volatile tier."""
        return self._skills.index(platform, enabled_tools, self._disabled)

    def tools(self, enabled_tools: Collection[str]) -> list[_SkillTool]:
        names = frozenset(enabled_tools)
        return [
            _SkillTool(LIST_SPEC, lambda a, c: self._list(a, c, names)),
            _SkillTool(VIEW_SPEC, lambda a, c: self._view(a, c, names)),
            _SkillTool(MANAGE_SPEC, self._manage),
        ]

    def _list(self, args: dict[str, Any], ctx: ToolContext, tools: frozenset[str]) -> Any:
        category = args.get("category")
        skills = [
            {"name": s.name, "description": s.description, "category": s.category}
            | ({"problems": s.problems} if s.broken else {})
            for s in self.library(ctx.platform, tools).skills
            if s.visible and (category is None or s.category == category)
        ]
        return {"success": True, "skills": skills, "count": len(skills)}

    def _view(self, args: dict[str, Any], ctx: ToolContext, tools: frozenset[str]) -> Any:
        name = args.get("name")
        skill = self.library(ctx.platform, tools).get(name) if isinstance(name, str) else None
        if skill is None or not skill.visible:
            return {"success": False, "error": f"No skill named {name!r}; see skills_list."}
        path = args.get("path")
        if self._record_views:
            self.usage.record_view(skill.name, self._now())
        if isinstance(path, str) and path:
            try:
                target = supporting_path(skill.path, path)
            except SkillRefused as exc:
                return {"success": False, "error": str(exc)}
            if not target.is_file():
                return {"success": False, "error": f"{path!r} is not a file of {skill.name}."}
            return {"success": True, "name": skill.name, "path": path, "content": _text(target)}
        return {
            "success": True,
            "name": skill.name,
            "content": _text(skill.path / SKILL_FILE),
            "files": _supporting_files(skill.path),
        }

    def _manage(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        if self.approvals is not None:
            return self.approvals.stage(args, ctx.origin)
        result = self._skills.manage(args)
        if result.get("success"):
            record_results(self.usage, result.get("results", []), ctx.origin, self._now())
        return result

    def _now(self) -> datetime:
        if self._clock is None:
            return datetime.now(tz=UTC)
        return datetime.fromtimestamp(self._clock.now(), tz=UTC)


Run = Callable[[dict[str, Any], ToolContext], Any]


class _SkillTool:
    def __init__(self, spec: ToolSpec, run: Run) -> None:
        self.spec = spec
        self._run = run

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        # Files, locks and fsyncs block: keep them off the event loop.
        payload = await asyncio.to_thread(self._run, args, ctx)
        return json.dumps(payload, ensure_ascii=False)


def _supporting_files(folder: Path) -> list[str]:
    files = []
    for sub in SUPPORT_FOLDERS:
        root = folder / sub
        if root.is_dir():
            files += sorted(
                p.relative_to(folder).as_posix() for p in root.rglob("*") if p.is_file()
            )
    return files


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")
