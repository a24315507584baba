"""The running gateway: SessionDB, model, core, features and platforms, started and
stopped as one (``open_gateway``).

Start-up, in order: take the database's lease (``Role.OWNER`` only); migrate; open the
SessionDB and the model client; build the core; enter each enabled feature (its tools,
commands, hooks and jobs join the core); start each platform; then, as the owner only,
send what a previous process committed but did not deliver, queue what it accepted but
did not process, let each feature pick up what it left, and start the scheduler.
Everything is entered on one ``AsyncExitStack`` and undone in reverse.

Roles: one process owns a database's turns (``chatgate run``, holding the lease of
``core.store.lease``); it alone recovers pending work and runs scheduled jobs (cron,
Curator, unfinished reviews). A guest (``chatgate chat``) answers only what its own
adapter hands in, next to a running gateway or without one. If the owner loses its
lease it stops taking work (``Gateway.drain``) and the process ends.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from adapters.base import Adapter
from adapters.platform import PlatformServices, PlatformSpec
from core.assembly import Core, CoreSettings
from core.clock import Clock, SystemClock
from core.hooks import TurnHooks
from core.ingress import SessionPolicy
from core.models.base import ModelClient
from core.models.factory import build_model_client
from core.people.marks import forget_marks_path
from core.prompt.builder import TieredPromptBuilder
from core.scheduler import Scheduler
from core.skills.store import SkillStore
from core.store.db import SessionDB
from core.store.lease import DatabaseLease
from core.store.schema_version import upgrade_schema
from core.tasks import TaskSet
from core.tools import Tool
from core.turn_commit import CommitPolicy
from gateway import platforms
from gateway.features import FEATURES
from gateway.features.audit import audited, open_audit
from gateway.features.base import Contribution, Feature, FeatureContext, Metric
from gateway.media_intake import build_intake
from gateway.otel import open_telemetry
from gateway.settings import Settings

log = logging.getLogger(__name__)

F = TypeVar("F")


class Role(enum.Enum):
    """What a process may do with the database it shares (see the module docstring)."""

    OWNER = "owner"  # holds the lease: every chat's pending work, scheduled jobs
    GUEST = "guest"  # only the messages its own adapters hand in


@dataclass(slots=True)
class Gateway:
    """Everything a running gateway holds; built by ``open_gateway``."""

    settings: Settings
    db: SessionDB
    core: Core
    model: ModelClient
    scheduler: Scheduler
    # The one writer of the home's skills folder, shared by every feature that writes it.
    skills: SkillStore
    adapters: dict[str, Adapter] = field(default_factory=dict)
    features: list[Feature] = field(default_factory=list)
    contributions: list[Contribution] = field(default_factory=list)
    ready: bool = False
    stopping: bool = False

    async def drain(self) -> None:
        """Begin a graceful stop (``Core.drain`` with ``server.shutdown_grace``);
        ``/readyz`` answers 503 from now on. ``open_gateway``'s exit does the rest."""
        self.stopping = True
        self.ready = False
        await self.core.drain(self.settings.server.shutdown_grace)

    def feature(self, kind: type[F]) -> F:
        """The running feature of class ``kind`` (``gateway.feature(Review).service``)."""
        for feature in self.features:
            if isinstance(feature, kind):
                return feature
        raise LookupError(f"no {kind.__name__} feature is running")

    def metrics(self) -> Iterable[Metric]:
        for contribution in self.contributions:
            if contribution.metrics is not None:
                yield from contribution.metrics()


async def migrate(settings: Settings) -> None:
    """Bring the SessionDB schema up to date (one-line ``StoreError`` if it cannot)."""
    await upgrade_schema(settings.database_url, busy_timeout_ms=settings.database.busy_timeout_ms)


def database_lease(settings: Settings) -> DatabaseLease:
    """The (not yet taken) lease on ``settings``' database."""
    return DatabaseLease(settings.database_url, check_seconds=settings.database.lease_check_seconds)


def build_features(settings: Settings) -> list[Feature]:
    """The enabled features for these settings; a bad setting is a ``ConfigError``."""
    built = (spec.build(settings) for spec in FEATURES)
    return [feature for feature in built if feature is not None]


@asynccontextmanager
async def open_gateway(
    settings: Settings,
    adapters: Sequence[Adapter],
    *,
    features: Sequence[Feature] | None = None,
    tools: Sequence[Tool] = (),
    clock: Clock | None = None,
    model: ModelClient | None = None,
    role: Role = Role.OWNER,
    lease: DatabaseLease | None = None,
) -> AsyncIterator[Gateway]:
    """Start the gateway (see the module docstring); stop all of it on exit.

    ``features`` defaults to ``build_features(settings)``; ``tools`` are added after the
    features' (for tests and embedders). An owner takes ``lease`` (default
    ``database_lease(settings)``) unless its caller already holds it; ``DatabaseHeld``
    when another process does.
    """
    clock = clock or SystemClock()
    settings.home.mkdir(parents=True, exist_ok=True)
    async with AsyncExitStack() as stack:
        if role is Role.OWNER:
            lease = await _hold(stack, lease or database_lease(settings))
        await migrate(settings)
        gateway = await _core(stack, settings, adapters, clock, model)
        for feature in build_features(settings) if features is None else features:
            await _enter(stack, gateway, feature, clock)
        for tool in tools:
            gateway.core.tools.register(tool)
        before_start = await gateway.db.newest_inbox_id()
        for adapter in adapters:
            await adapter.start(gateway.core.ingress, gateway.core.ledger)
            stack.push_async_callback(adapter.stop)
        if lease is not None:
            await _take_over(stack, gateway, lease, up_to=before_start)
        gateway.ready = True
        try:
            yield gateway
        finally:
            gateway.ready = False


async def _hold(stack: AsyncExitStack, lease: DatabaseLease) -> DatabaseLease:
    if not lease.held:  # ``chatgate run`` takes it before the server starts
        await stack.enter_async_context(lease)
    return lease


async def _take_over(
    stack: AsyncExitStack, gateway: Gateway, lease: DatabaseLease, *, up_to: int
) -> None:
    """The owner's duties: what earlier processes left, scheduled jobs, and a stop when
    the lease is lost."""
    await gateway.core.recover(up_to=up_to)
    for contribution in gateway.contributions:
        if contribution.recover is not None:
            await contribution.recover()
    gateway.scheduler.start()
    stack.push_async_callback(gateway.scheduler.stop)
    watch = TaskSet("lease")
    stack.push_async_callback(watch.close)
    watch.spawn(_stop_when_lost(gateway, lease), name="lost")


async def _stop_when_lost(gateway: Gateway, lease: DatabaseLease) -> None:
    await lease.lost.wait()
    # Another gateway may own the database now: take no more work, finish what runs.
    await gateway.drain()


async def _core(
    stack: AsyncExitStack,
    settings: Settings,
    adapters: Sequence[Adapter],
    clock: Clock,
    model: ModelClient | None,
) -> Gateway:
    db = await stack.enter_async_context(
        SessionDB(
            settings.database_url,
            busy_timeout_ms=settings.database.busy_timeout_ms,
            max_batch=settings.database.max_batch,
            probe_max_seconds=settings.recovery.probe_max_seconds,
        )
    )
    if model is None:
        model = build_model_client(settings.model_config_for_core())
        stack.push_async_callback(model.aclose)
    _announce_model(model)
    hooks = TurnHooks()
    prompts = TieredPromptBuilder(
        settings.home,
        identity=settings.prompt.identity,
        context_max_chars=settings.prompt.context_max_chars,
        tool_guidance=hooks.tool_guidance,
        platform_hints=platforms.prompt_hints(settings),
    )
    senders = {adapter.name: adapter for adapter in adapters}
    previews = {a.name: a.previews for a in adapters if a.previews is not None}
    audit = await stack.enter_async_context(open_audit(settings, db, clock))
    telemetry = open_telemetry(settings.telemetry, stack)
    core = Core(
        db,
        model,
        prompts,
        hooks,
        clock,
        senders,
        _core_settings(settings),
        caller_context_for=settings.caller_context,
        telemetry=audited(telemetry, audit, settings.pricing.pricing().cost_of),
        previews=previews,
        intake=build_intake(settings),
        audit=audit,
    )
    await stack.enter_async_context(core)
    skills = SkillStore(settings.home / "skills")
    return Gateway(settings, db, core, model, Scheduler(), skills, adapters=dict(senders))


async def _enter(stack: AsyncExitStack, gateway: Gateway, feature: Feature, clock: Clock) -> None:
    """Open ``feature`` and add what it contributes to the core and the scheduler."""
    ctx = FeatureContext(
        settings=gateway.settings,
        db=gateway.db,
        skills=gateway.skills,
        model=gateway.core.model,  # timed and counted for /metrics
        clock=clock,
        core=gateway.core,
        scheduler=gateway.scheduler,
    )
    contribution = await stack.enter_async_context(feature.open(ctx))
    _add(gateway.core, gateway.scheduler, contribution)
    gateway.features.append(feature)
    gateway.contributions.append(contribution)


def _add(core: Core, scheduler: Scheduler, c: Contribution) -> None:
    for tool in c.tools:
        core.tools.register(tool)
    for command in c.commands:
        core.commands.register(command)
    hooks = core.hooks
    hooks.tool_guidance.update(c.guidance)
    hooks.prompt_blocks.extend(c.prompt_blocks)
    hooks.before_turn.extend(c.before_turn)
    hooks.turn_material.extend(c.turn_material)
    hooks.slash_claims.extend(c.slash_claims)
    hooks.turn_done.extend(c.turn_done)
    hooks.session_started.extend(c.session_started)
    hooks.session_ended.extend(c.session_ended)
    hooks.status_lines.extend(c.status_lines)
    hooks.pre_compress.extend(c.pre_compress)
    hooks.memory_written.extend(c.memory_written)
    hooks.reply_media.extend(c.reply_media)
    for job in c.jobs:
        scheduler.every(job.id, job.name, job.every_seconds, job.check, first_in=job.first_in)


def _core_settings(settings: Settings) -> CoreSettings:
    return CoreSettings(
        sessions=SessionPolicy(
            group_sessions_per_user=settings.sessions.group_sessions_per_user,
            by_platform=platforms.group_sessions_by_platform(settings),
        ),
        access=platforms.access_rules(settings),
        idle_worker_seconds=settings.sessions.idle_worker_seconds,
        session_cache_bytes=settings.sessions.cache_bytes,
        max_iterations=settings.sessions.max_iterations,
        max_tool_calls_per_turn=settings.sessions.max_tool_calls_per_turn,
        tools=settings.tools.policy(),
        turn_timeout_seconds=settings.sessions.turn_timeout_seconds,
        slow_notice_seconds=settings.model.slow_notice_seconds,
        commits=CommitPolicy(
            max_age_seconds=settings.recovery.max_age,
            retry_max_seconds=settings.recovery.probe_max_seconds,
        ),
        approvals=settings.tools.rules(),
        streaming=settings.streaming.enabled,
        forget_marks=forget_marks_path(settings.home),
        pricing=settings.pricing.pricing(),
        budgets=settings.budgets.rules(),
    )


def _announce_model(model: ModelClient) -> None:
    if model.provider == "offline":
        log.warning(
            "no model is configured: answering with the offline provider. Set "
            "OPENAI_BASE_URL, OPENAI_API_KEY and CHATGATE_MODEL (or ANTHROPIC_API_KEY)."
        )
    else:
        log.info("model: %s via %s", model.model, model.provider)


def platform_services(settings: Settings, clock: Clock, stop: asyncio.Event) -> PlatformServices:
    """What platform factories get: the home, the clock, and a way to end the process."""
    return PlatformServices(home=settings.home, now=clock.now, request_stop=stop.set)


async def run_interactive(settings: Settings, spec: PlatformSpec[Any]) -> None:
    """``chatgate chat``: the gateway with only ``spec``'s adapter, until it asks to stop."""
    clock, stop = SystemClock(), asyncio.Event()
    services = platform_services(settings, clock, stop)
    adapters = platforms.build_adapters(settings, [spec], services)
    async with open_gateway(settings, adapters, clock=clock, role=Role.GUEST):
        await stop.wait()
