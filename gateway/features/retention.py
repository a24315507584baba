"""Retention: ended sessions older than ``retention.sessions_days`` deleted on a schedule."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pydantic import Field

from adapters.platform import Section
from core.people.retention import Retention
from gateway.features.base import Contribution, FeatureContext, FeatureSpec, Job
from gateway.settings import Settings

JOB_ID = "retention"

STARTER_CONFIG = """\
retention:
  sessions_days: null      # delete sessions ended this many days ago (null: keep all)
  check_minutes: 60        # how often old sessions are looked for
"""


class RetentionSettings(Section):
    """How long ended sessions are kept."""

    # Sessions ended more than this many days ago are deleted, with their search rows.
    sessions_days: float | None = Field(default=None, gt=0)
    check_minutes: float = Field(default=60, gt=0)


class RetentionFeature:
    def __init__(self, days: float, check_minutes: float) -> None:
        self._days = days
        self._every = check_minutes * 60
        self.retention: Retention | None = None  # once open (tests run its check)

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        retention = self.retention = Retention(ctx.db, ctx.clock, days=self._days)
        every = self._every
        yield Contribution(jobs=[Job(JOB_ID, "retention", every, retention.check, first_in=0)])


def build(settings: Settings) -> RetentionFeature | None:
    section = settings.section(RetentionSettings)
    if section.sessions_days is None:
        return None
    return RetentionFeature(section.sessions_days, section.check_minutes)


SPEC = FeatureSpec("retention", build, settings=RetentionSettings, starter_config=STARTER_CONFIG)
