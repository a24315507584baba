"""The audit ledger's settings, its writer's life and its retention job.

``open_audit`` (called by ``gateway.runtime`` before the core is built, since every part
of the core records into it) starts the writer when ``audit.enabled``; the feature then
adds the turn hooks (``core.audit.hooks``), schedules the pruning of events older than
``audit.retention_days`` and shows the writer's counters in ``/metrics``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

from pydantic import Field

from adapters.platform import Section
from core.audit.events import NO_AUDIT, AuditSink
from core.audit.hooks import AuditHooks
from core.audit.retention import AuditRetention
from core.audit.telemetry import AuditTelemetry, CostOf
from core.audit.writer import AuditWriter
from core.clock import Clock
from core.store.db import SessionDB
from core.telemetry import Telemetry
from gateway.features.base import Contribution, FeatureContext, FeatureSpec, Job, Metric
from gateway.settings import Settings

JOB_ID = "audit-retention"

STARTER_CONFIG = """\
audit:
  enabled: true            # record what the gateway did (metadata only, never text)
  retention_days: 90       # delete audit events older than this (null: keep all)
  check_minutes: 60        # how often old events are looked for
"""


class AuditSettings(Section):
    """The audit ledger (``chatgate audit``)."""

    enabled: bool = True
    # Events older than this many days are deleted by the scheduler (None: kept).
    retention_days: float | None = Field(default=90, gt=0)
    check_minutes: float = Field(default=60, gt=0)


@asynccontextmanager
async def open_audit(settings: Settings, db: SessionDB, clock: Clock) -> AsyncIterator[AuditSink]:
    """The audit writer for the gateway's life (``NO_AUDIT`` when it is off)."""
    if not settings.section(AuditSettings).enabled:
        yield NO_AUDIT
        return
    async with AuditWriter(db.audit, clock) as writer:
        yield writer


def audited(telemetry: Telemetry, audit: AuditSink, cost_of: CostOf | None = None) -> Telemetry:
    """``telemetry`` that also records turns, model and tool calls in ``audit`` (itself when
    the audit is off); ``cost_of(provider, model, tokens)`` prices each model call (the
    usage accounting's pricing; without it the cost stays empty)."""
    if audit is NO_AUDIT:
        return telemetry
    return AuditTelemetry(telemetry, audit, cost_of)


class AuditFeature:
    def __init__(self, section: AuditSettings) -> None:
        self._section = section
        self.retention: AuditRetention | None = None  # once open (tests run its check)

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        days, audit = self._section.retention_days, ctx.core.audit
        jobs = []
        if days is not None:
            self.retention = AuditRetention(ctx.db.audit, ctx.clock, days=days)
            every = self._section.check_minutes * 60
            jobs.append(Job(JOB_ID, "audit retention", every, self.retention.check, first_in=0))
        writer = audit if isinstance(audit, AuditWriter) else None
        hooks = AuditHooks(audit)
        yield Contribution(
            jobs=jobs,
            metrics=(lambda: _metrics(writer)) if writer else None,
            before_turn=[hooks.session_known],  # after compaction's: FEATURES' order
            memory_written=[hooks.memory_written],
        )


def _metrics(writer: AuditWriter) -> Iterator[Metric]:
    counts = {"written": writer.written, "dropped": writer.dropped, "failed": writer.failed}
    yield Metric("chatgate_audit_events", "Audit events by outcome", "counter", counts, "outcome")


def build(settings: Settings) -> AuditFeature | None:
    section = settings.section(AuditSettings)
    return AuditFeature(section) if section.enabled else None


SPEC = FeatureSpec("audit", build, settings=AuditSettings, starter_config=STARTER_CONFIG)
