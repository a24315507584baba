"""Skills: procedures saved for reuse, the three skill tools, ``/skills`` and ``/<skill>``.

A compact index of the skills the chat's model can see leads each new session's
volatile tier; ``/<skill-name>`` loads that skill into one turn. With
``skills.write_approval`` every ``skill_manage`` batch is staged until approved. Every
writer goes through the gateway's one ``SkillStore`` (``FeatureContext.skills``), so a
write shows in the next session's index.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from pydantic import Field

from adapters.platform import Section
from core.hooks import INDEX_BLOCKS, PromptBlock, SlashClaim, TurnMaterial
from core.messages import InboundMessage
from core.skills.approval import SkillApprovals
from core.skills.commands import skill_commands
from core.skills.slash import slash_claim, slash_loader
from core.skills.tools import SKILL_TOOL_NAMES, SkillTools
from core.store.records import SessionRow
from core.tools import ToolRegistry
from gateway.features.base import Contribution, FeatureContext, FeatureSpec
from gateway.settings import Settings

GUIDANCE = (
    "Skills are procedures saved for reuse. When the skills index lists one that matches "
    "the task, even partly, load it with `skill_view` before starting."
)

STARTER_CONFIG = """\
skills:
  enabled: true            # skills_list / skill_view / skill_manage and the skills index
  disabled: []             # skill names the model never sees
  write_approval: false    # stage skill writes until approved (/skills pending)
  nudge_interval: 10       # tool iterations without skill_manage before a skill review
  approvers: []            # who may approve/reject in chat, e.g. ["webhook:alice"];
                           # empty: the platform's owners (<platform>.owners)
"""


class SkillsSettings(Section):
    enabled: bool = True
    # Skill names the model never sees (they stay on disk).
    disabled: list[str] = Field(default_factory=list)
    # Stage every skill_manage batch in pending/skills/ until a person approves it.
    write_approval: bool = False
    # A background skill review after this many tool iterations without skill_manage (0: off).
    nudge_interval: int = Field(default=10, ge=0, le=1000)
    # Who may /skills approve and /skills reject in chat ("platform:user_id"); empty: owners.
    approvers: list[str] = Field(default_factory=list)


class Skills:
    def __init__(self, settings: SkillsSettings) -> None:
        self._settings = settings

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        s, registry = self._settings, ctx.core.tools
        approvals = SkillApprovals(ctx.settings.home, ctx.skills)
        tools = SkillTools(
            ctx.skills,
            disabled=s.disabled,
            approvals=approvals if s.write_approval else None,
        )
        yield Contribution(
            tools=tools.tools(enabled_tools=[*registry.names(), *SKILL_TOOL_NAMES]),
            commands=skill_commands(
                lambda platform: tools.library(platform, registry.names()),
                approvals,
                approval=s.write_approval,
                approvers=s.approvers,
            ),
            guidance={"skills_list": GUIDANCE},
            prompt_blocks=[PromptBlock(lambda msg, names: _index(tools, msg, names), INDEX_BLOCKS)],
            turn_material=[_slash_skills(ctx, s, registry)],
            slash_claims=[_skill_claims(ctx, s, registry)],
        )


def _index(tools: SkillTools, msg: InboundMessage, offered: Sequence[str]) -> list[str]:
    """The skills index, for a session offered ``skill_view`` only: it tells the model
    to load skills with that tool."""
    return [tools.index(msg.platform, offered)] if "skill_view" in offered else []


def _slash_skills(ctx: FeatureContext, s: SkillsSettings, registry: ToolRegistry) -> TurnMaterial:
    """``/<skill-name>``: that skill's instructions, for this turn only."""
    load = slash_loader(ctx.settings.home / "skills", s.disabled, registry.names)

    async def material(msg: InboundMessage, row: SessionRow) -> str | None:
        return await load(msg.text, msg.platform)

    return material


def _skill_claims(ctx: FeatureContext, s: SkillsSettings, registry: ToolRegistry) -> SlashClaim:
    """``/<skill-name>`` is the skill's, not an unknown command."""
    claims = slash_claim(ctx.settings.home / "skills", s.disabled, registry.names)

    async def claim(msg: InboundMessage) -> bool:
        return await claims(msg.text, msg.platform)

    return claim


def build(settings: Settings) -> Skills | None:
    s = settings.section(SkillsSettings)
    return Skills(s) if s.enabled else None


SPEC = FeatureSpec("skills", build, settings=SkillsSettings, starter_config=STARTER_CONFIG)
