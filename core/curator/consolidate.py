"""The opt-in model pass that merges near-duplicate curator-managed skills into umbrella skills.

The model gets the skill tools and nothing else, plus ``skill_absorb`` to archive a skill
it merged into an umbrella (recording ``absorbed_into``). It writes as the background
review does (``created_by: agent``), and its jurisdiction is enforced here, not trusted to
the prompt: it cannot write to skills a person owns (it is told to suggest
``chatgate curator adopt``), cannot delete anything, and cannot absorb pinned skills or
skills a cron job uses. Its own reading does not count as use.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.clock import Clock
from core.curator.transitions import LiveSkill, archive_skill
from core.errors import ModelError, TransitionError
from core.models.base import ModelClient, ToolSpec
from core.skills.library import SKILL_FILE, split_frontmatter
from core.skills.manage import find_skill
from core.skills.store import SkillStore
from core.skills.tools import MANAGE_SPEC, SKILL_TOOL_NAMES, SkillTools
from core.skills.usage import SkillUsage
from core.store.records import NewMessage
from core.tools import Tool, ToolContext, ToolRegistry
from core.turn import TurnRunner

ABSORB_SPEC = ToolSpec(
    name="skill_absorb",
    description=(
        "After merging a skill's content into an umbrella skill, archive the merged skill and "
        "record which umbrella absorbed it. Nothing is deleted."
    ),
    parameters={
        "type": "object",
        "properties": {"name": {"type": "string"}, "into": {"type": "string"}},
        "required": ["name", "into"],
    },
)
SYSTEM = """You are the skills curator of an AI agent. You tidy the skills the agent wrote \
for itself. Find near-duplicate skills and merge each group into one umbrella skill: \
patch or create the umbrella with skill_manage so it keeps every useful step, then call \
skill_absorb for each skill merged into it. Fix obvious drift while you are there. \
You may only write to the candidate skills listed by the user and to new skills you \
create. Never try to delete. If a skill outside the list should be merged, say so and \
recommend `chatgate curator adopt <name>` instead of touching it. When done, answer with \
a short summary of what you changed and why."""
CONTEXT = ToolContext(
    session_id="curator",
    session_key="curator",
    platform="curator",
    chat_id="",
    user_id="",
    origin="background_review",
)


@dataclass(slots=True)
class ConsolidationResult:
    """What the model pass did; ``model`` is None when no model was called."""

    model: str | None
    candidates: tuple[str, ...]
    absorbed: list[tuple[str, str]] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    summary: str = ""
    tool_calls: int = 0


class Consolidator:
    """Runs one consolidation over a skills store with one model."""

    def __init__(
        self, model: ModelClient, skills: SkillStore, clock: Clock, *, max_iterations: int = 60
    ) -> None:
        self.model = model
        self.skills_dir = skills.skills_dir
        self._skills = skills
        self._clock = clock
        self._max_iterations = max_iterations

    async def run(
        self, skills: Sequence[LiveSkill], protected: Collection[str]
    ) -> ConsolidationResult:
        """Survey the managed skills; with fewer than two there is nothing to merge."""
        candidates = [s for s in skills if s.record.managed]
        names = tuple(s.name for s in candidates)
        if len(candidates) < 2:
            return ConsolidationResult(None, names, summary="Fewer than two managed skills.")
        result = ConsolidationResult(self.model.model, names)
        registry = self._registry(result, frozenset(protected))
        runner = TurnRunner(self.model, registry, self._clock, max_iterations=self._max_iterations)
        user = NewMessage(role="user", content=_survey(candidates), created_at=self._clock.now())
        try:
            turn = await runner.run(system=SYSTEM, history=(), user=user, ctx=CONTEXT)
        except ModelError as exc:
            result.summary = f"The model could not be reached: {exc}"
            return result
        result.summary = turn.reply
        result.tool_calls = turn.tool_calls
        return result

    def _registry(self, result: ConsolidationResult, protected: frozenset[str]) -> ToolRegistry:
        tools = SkillTools(self._skills, clock=self._clock, record_views=False)
        registry = ToolRegistry()
        for tool in tools.tools(SKILL_TOOL_NAMES):
            if tool.spec.name == MANAGE_SPEC.name:
                registry.register(_GuardedManage(tool, self.skills_dir, result, protected))
            else:
                registry.register(tool)
        registry.register(_Absorb(self._skills, self._clock, result, protected))
        return registry


def _survey(candidates: Sequence[LiveSkill]) -> str:
    lines = ["Candidate skills (curator-managed): name, category, description, uses/views."]
    for skill in candidates:
        lines.append(
            f"- {skill.name} [{skill.category or '-'}] {_description(skill)} "
            f"({skill.record.use_count}/{skill.record.view_count})"
        )
    return "\n".join(lines)


def _description(skill: LiveSkill) -> str:
    frontmatter, _body = split_frontmatter((skill.folder / SKILL_FILE).read_text("utf-8"), [])
    value = frontmatter.get("description")
    return " ".join(value.split()) if isinstance(value, str) else ""


def _refuse(result: ConsolidationResult, message: str) -> str:
    result.refusals.append(message)
    return json.dumps({"success": False, "error": message})


class _GuardedManage:
    """``skill_manage`` limited to the curator's jurisdiction."""

    def __init__(
        self,
        inner: Tool,
        skills_dir: Path,
        result: ConsolidationResult,
        protected: frozenset[str],
    ) -> None:
        self._inner = inner
        self._skills_dir = skills_dir
        self._result = result
        self._protected = protected

    @property
    def spec(self) -> ToolSpec:
        return self._inner.spec

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        operations = args.get("operations", [args])
        if not isinstance(operations, list):
            operations = [args]
        for operation in operations:
            refusal = self._refusal(operation)
            if refusal is not None:
                return _refuse(self._result, refusal)
        output = await self._inner.call(args, ctx)
        payload = json.loads(output)
        if payload.get("success"):
            for step in payload.get("results", []):
                if step["name"] not in self._result.written:
                    self._result.written.append(step["name"])
        return output

    def _refusal(self, operation: object) -> str | None:
        if not isinstance(operation, Mapping):
            return None  # skill_manage itself explains a malformed operation
        name, action = operation.get("name"), operation.get("action")
        if action == "delete":
            return "The curator never deletes; merge the skill and call skill_absorb instead."
        if not isinstance(name, str) or find_skill(self._skills_dir, name) is None:
            return None
        record = SkillUsage(self._skills_dir).get(name)
        if record is None or not record.managed:
            return (
                f"{name!r} belongs to a person, not the curator; do not change it. "
                f"Recommend `chatgate curator adopt {name}` in your summary instead."
            )
        if record.pinned or name in self._protected:
            # A cron job loads it into unattended runs, or a person pinned it: hands off.
            return f"{name!r} is pinned or used by a cron job; the curator does not change it."
        return None


class _Absorb:
    """``skill_absorb``: archive a merged skill and record its umbrella."""

    spec = ABSORB_SPEC

    def __init__(
        self,
        skills: SkillStore,
        clock: Clock,
        result: ConsolidationResult,
        protected: frozenset[str],
    ) -> None:
        self._skills = skills
        self._skills_dir = skills.skills_dir
        self._clock = clock
        self._result = result
        self._protected = protected

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        name, into = args.get("name"), args.get("into")
        if not isinstance(name, str) or not isinstance(into, str) or name == into:
            return _refuse(self._result, "skill_absorb needs two different skill names")
        refusal = self._refusal(name, into)
        if refusal is not None:
            return _refuse(self._result, refusal)
        at = datetime.fromtimestamp(self._clock.now(), tz=UTC)
        try:
            await asyncio.to_thread(archive_skill, self._skills, name, at)
        except TransitionError as exc:
            return _refuse(self._result, str(exc))
        SkillUsage(self._skills_dir).set_absorbed_into(name, into, at)
        self._result.absorbed.append((name, into))
        return json.dumps({"success": True, "archived": name, "absorbed_into": into})

    def _refusal(self, name: str, into: str) -> str | None:
        if find_skill(self._skills_dir, into) is None:
            return f"no umbrella skill named {into!r}; create it first"
        record = SkillUsage(self._skills_dir).get(name)
        if find_skill(self._skills_dir, name) is None or record is None:
            return f"no curator-managed skill named {name!r}"
        if not record.managed:
            return f"{name!r} belongs to a person; recommend `chatgate curator adopt {name}`"
        if record.pinned or name in self._protected:
            return f"{name!r} is pinned or used by a cron job; it stays"
        return None
