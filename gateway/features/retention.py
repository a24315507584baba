"""Retention on a schedule: ended sessions older than ``retention.sessions_days`` (off
unless set) and the delivery queue's rows older than ``retention.queue_days`` (7)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pydantic import Field

from adapters.platform import Section
from core.errors import ConfigError
from core.people.retention import DAY, Retention
from gateway.features.base import Contribution, FeatureContext, FeatureSpec, Job
from gateway.settings import Settings

JOB_ID = "retention"

STARTER_CONFIG = """\
retention:
  sessions_days: null      # delete sessions ended this many days ago (null: keep all)
  queue_days: 7            # delete handled messages and sent replies from the delivery
                           # queue after this many days, at least 1 (null: keep all)
  check_minutes: 60        # how often old rows are looked for
"""


class RetentionSettings(Section):
    """How long ended sessions and the delivery queue's handled rows are kept."""

    # Sessions ended more than this many days ago are deleted, with their search rows.
    sessions_days: float | None = Field(default=None, gt=0)
    # Handled inbox rows and sent replies older than this are deleted. At least a day:
    # a redelivery is answered from them, and a platform's catch-up reads the last hour.
    queue_days: float | None = Field(default=7, ge=1)
    check_minutes: float = Field(default=60, gt=0)


class RetentionFeature:
    def __init__(self, section: RetentionSettings) -> None:
        self._section = section
        self.retention: Retention | None = None  # once open (tests run its check)

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        section = self._section
        retention = self.retention = Retention(
            ctx.db, ctx.clock, sessions_days=section.sessions_days, queue_days=section.queue_days
        )
        every = section.check_minutes * 60
        yield Contribution(jobs=[Job(JOB_ID, "retention", every, retention.check, first_in=0)])


def build(settings: Settings) -> RetentionFeature | None:
    section = settings.section(RetentionSettings)
    if section.sessions_days is None and section.queue_days is None:
        return None
    if section.queue_days is not None:
        _check_catch_up(settings, section.queue_days)
    return RetentionFeature(section)


def _check_catch_up(settings: Settings, queue_days: float) -> None:
    """A platform that reads its history again after a restart (for its
    ``catch_up_max_age`` seconds) finds what it already handled by the inbox rows: they
    must outlive that window, or an old message would be answered twice."""
    for name in settings.platforms:
        seconds = getattr(settings.platform(name), "catch_up_max_age", 0)
        if seconds >= queue_days * DAY:
            raise ConfigError(
                "retention.queue_days",
                f"{queue_days:g} days is not longer than {name}.catch_up_max_age "
                f"({seconds:g} s): a message read again on catch-up would be answered twice",
            )


SPEC = FeatureSpec("retention", build, settings=RetentionSettings, starter_config=STARTER_CONFIG)
