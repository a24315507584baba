"""The Curator: an idle-gated pass that stales and archives skills the agent made itself.

Checked every ``curator.check_minutes``; a pass runs only when ``interval_hours`` have
passed since the last one and nobody wrote to the agent for ``min_idle_hours``. It
never deletes: archived skills go to ``skills/.archive/``, and every pass is preceded
by a snapshot that ``chatgate curator rollback`` restores.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pydantic import Field

from adapters.platform import Section
from core.clock import Clock, SystemClock
from core.curator.policy import CuratorPolicy
from core.curator.service import Curator
from core.models.base import ModelClient
from core.skills.store import SkillStore
from core.store.db import SessionDB
from core.usage.background import BackgroundModel
from gateway.features.base import Contribution, FeatureContext, FeatureSpec, Job
from gateway.features.skills import SkillsSettings
from gateway.settings import Settings

JOB_ID = "curator"

STARTER_CONFIG = """\
curator:
  enabled: true            # idle-gated passes over the agent's own skills
  interval_hours: 168      # between passes (the first waits one interval)
  min_idle_hours: 2        # no inbound message for this long before a pass
  stale_after_days: 30     # unused this long: stale
  archive_after_days: 90   # unused this long: moved to skills/.archive/
  consolidate: false       # a model pass merging near-duplicate agent skills
  keep_backups: 5          # snapshots of skills/ kept before passes
  check_minutes: 60        # how often the gates are checked
"""


class CuratorSettings(Section):
    """The idle-gated pass that stales and archives skills the agent created itself."""

    enabled: bool = True
    interval_hours: float = Field(default=168, gt=0)
    min_idle_hours: float = Field(default=2, ge=0)
    stale_after_days: float = Field(default=30, gt=0)
    archive_after_days: float = Field(default=90, gt=0)
    # A model pass that merges near-duplicate agent-created skills into umbrella skills.
    consolidate: bool = False
    keep_backups: int = Field(default=5, ge=1, le=100)
    # How often the gates are checked.
    check_minutes: float = Field(default=60, gt=0)


def policy_for(settings: Settings) -> CuratorPolicy:
    """The ``curator:`` settings as the core policy."""
    c = settings.section(CuratorSettings)
    return CuratorPolicy(
        enabled=c.enabled,
        interval_hours=c.interval_hours,
        min_idle_hours=c.min_idle_hours,
        stale_after_days=c.stale_after_days,
        archive_after_days=c.archive_after_days,
        # A pass cannot wait for a person: with skill write approval on it only prunes.
        consolidate=c.consolidate and not settings.section(SkillsSettings).write_approval,
        keep_backups=c.keep_backups,
    )


def build_curator(
    settings: Settings,
    db: SessionDB,
    skills: SkillStore,
    model: ModelClient | None = None,
    clock: Clock | None = None,
) -> Curator:
    """The curator the gateway and the CLI share (reports under the home).

    ``skills`` is the store every other skill writer of this process uses.
    """
    return Curator(
        db,
        skills=skills,
        reports_dir=settings.home / "curator" / "reports",
        policy=policy_for(settings),
        clock=clock or SystemClock(),
        model=model,
    )


class CuratorFeature:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self.curator: Curator | None = None

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        curator = build_curator(
            self._settings,
            ctx.db,
            ctx.skills,
            BackgroundModel(ctx.model, "curator", ctx.core.budgets),
            ctx.clock,
        )
        self.curator = curator
        every = self._settings.section(CuratorSettings).check_minutes * 60
        # The first check runs at start, which arms a fresh install's first interval.
        yield Contribution(jobs=[Job(JOB_ID, "curator check", every, curator.check, first_in=0)])


def build(settings: Settings) -> CuratorFeature | None:
    return CuratorFeature(settings) if settings.section(CuratorSettings).enabled else None


SPEC = FeatureSpec("curator", build, settings=CuratorSettings, starter_config=STARTER_CONFIG)
