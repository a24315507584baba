"""The background review: after a reply, every ~10 turns, the agent looks back and
keeps what is worth keeping (memory, skills), beside the chat and never in its way.

A memory review comes after ``memory.nudge_interval`` user turns without a memory write,
a skill review after ``skills.nudge_interval`` tool steps without ``skill_manage``; the
review is off when neither can happen. A review scheduled before a restart runs again
at the next start.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager

from pydantic import Field

from adapters.platform import Section
from core.messages import ChatTarget
from core.review.cadence import Intervals
from core.review.service import ReviewPolicy, ReviewService
from core.review.status import review_status
from core.usage.background import BackgroundModel
from gateway.features.base import Contribution, FeatureContext, FeatureSpec, Metric
from gateway.features.memory import MemorySettings
from gateway.features.skills import SkillsSettings
from gateway.settings import Settings

STARTER_CONFIG = """\
review:
  enabled: true            # background review after the reply (memory and skills)
  concurrency: 1           # reviews at once; they never hold a chat's lane
  max_iterations: 16       # model calls per review
  notify: true             # tell the chat what a review changed
"""


class ReviewSettings(Section):
    """The background review that runs after a reply, every ~10 turns of a session."""

    enabled: bool = True
    # Reviews running at once across the gateway; they never hold a chat's lane.
    concurrency: int = Field(default=1, ge=1, le=32)
    max_iterations: int = Field(default=16, ge=1, le=64)
    # Tell the chat what a review changed ("Memory updated: ...").
    notify: bool = True


class Review:
    def __init__(self, policy: ReviewPolicy) -> None:
        self._policy = policy
        self.service: ReviewService | None = None

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        core = ctx.core

        async def notify(target: ChatTarget, texts: Sequence[str], session_id: str) -> None:
            await core.notify(target, texts, session_id=session_id)

        service = ReviewService(
            ctx.db,
            BackgroundModel(ctx.model, "review", core.budgets),
            core.tools,
            ctx.clock,
            self._policy,
            until_idle=core.until_idle,
            notify=notify,
        )
        self.service = service
        try:
            yield Contribution(
                turn_done=[service.turn_completed],
                status_lines=[review_status(service)],
                recover=service.resume_unfinished,
                metrics=lambda: _metrics(service),
            )
        finally:
            await service.close()


def _metrics(service: ReviewService) -> Iterator[Metric]:
    yield Metric("chatgate_reviews", "Background reviews", "counter", service.outcomes, "status")
    yield Metric(
        "chatgate_reviews_running", "Background reviews in flight", "gauge", service.running
    )


def build(settings: Settings) -> Review | None:
    r = settings.section(ReviewSettings)
    memory, skills = settings.section(MemorySettings), settings.section(SkillsSettings)
    intervals = Intervals(
        memory=memory.nudge_interval if memory.enabled else 0,
        skills=skills.nudge_interval if skills.enabled else 0,
    )
    if not r.enabled or not (intervals.memory or intervals.skills):
        return None
    return Review(
        ReviewPolicy(
            intervals=intervals,
            concurrency=r.concurrency,
            max_iterations=r.max_iterations,
            notify=r.notify,
        )
    )


SPEC = FeatureSpec("review", build, settings=ReviewSettings, starter_config=STARTER_CONFIG)
