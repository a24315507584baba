"""The running gateway: SessionDB, model, core and adapters, started and stopped as one."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field

from adapters.base import Adapter
from core.clock import Clock, SystemClock
from core.commands import builtin_commands
from core.compaction import CompactionSettings
from core.conversations import Conversations, ConversationSettings
from core.cron.service import CronService
from core.curator.service import Curator
from core.memory.status import memory_status
from core.messages import ChatTarget, InboundMessage
from core.models.base import ModelClient
from core.models.factory import build_model_client
from core.prompt.builder import TieredPromptBuilder
from core.review.cadence import Intervals
from core.review.service import ReviewPolicy, ReviewService
from core.review.status import review_status
from core.scheduler import Scheduler
from core.search.tool import SessionSearchTool
from core.skills.approval import SkillApprovals
from core.skills.commands import skill_commands
from core.skills.slash import slash_loader
from core.skills.tools import SKILL_TOOL_NAMES, SkillTools
from core.store.db import SessionDB
from core.store.schema_version import upgrade_schema
from core.tools import Tool, ToolRegistry
from core.turn import TurnRunner
from gateway.config import Settings
from gateway.delivery import PushDelivery
from gateway.memory_setup import MemorySetup, memory_setup
from gateway.scheduling import CronWiring, schedule_curator

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Gateway:
    """Everything a running gateway holds; built by ``open_gateway``."""

    settings: Settings
    db: SessionDB
    conversations: Conversations
    model: ModelClient
    adapters: dict[str, Adapter] = field(default_factory=dict)
    ready: bool = False
    reviews: ReviewService | None = None
    scheduler: Scheduler = field(default_factory=Scheduler)
    cron: CronService | None = None
    curator: Curator | None = None


async def migrate(settings: Settings) -> None:
    """Bring the SessionDB schema up to date (``StoreError`` when it cannot be opened)."""
    await upgrade_schema(settings.database_url, busy_timeout_ms=settings.database.busy_timeout_ms)


@asynccontextmanager
async def open_gateway(
    settings: Settings,
    adapters: Sequence[Adapter],
    *,
    tools: Sequence[Tool] = (),
    clock: Clock | None = None,
    model: ModelClient | None = None,
    memory: MemorySetup | None = None,
) -> AsyncIterator[Gateway]:
    """Migrate, open the SessionDB, start the core and every adapter; undo all on exit."""
    clock = clock or SystemClock()
    settings.home.mkdir(parents=True, exist_ok=True)
    await migrate(settings)
    async with AsyncExitStack() as stack:
        db = await stack.enter_async_context(
            SessionDB(
                settings.database_url,
                busy_timeout_ms=settings.database.busy_timeout_ms,
                max_batch=settings.database.max_batch,
            )
        )
        if model is None:
            model = build_model_client(settings.model_config_for_core())
            stack.push_async_callback(model.aclose)
        _announce_model(model)
        cron = CronWiring(settings, db, clock) if settings.cron.enabled else None
        all_tools = [cron.tool, *tools] if cron is not None else tools
        conversations = await stack.enter_async_context(
            _conversations(settings, db, model, all_tools, clock, memory or memory_setup(settings))
        )
        gateway = Gateway(settings, db, conversations, model, {a.name: a for a in adapters})
        delivery = PushDelivery(db, gateway.adapters, clock)
        stack.push_async_callback(delivery.close)
        conversations.on_replies(delivery.deliver)
        if settings.memory.enabled:
            conversations.on_status(memory_status(db))
        if settings.skills.enabled:
            skills_dir, tool_names = settings.home / "skills", conversations.runner.tools.names
            conversations.on_turn_material(
                slash_loader(skills_dir, settings.skills.disabled, tool_names)
            )
        reviews = _reviews(settings, db, model, conversations, clock)
        if reviews is not None:
            stack.push_async_callback(reviews.close)
            conversations.on_turn_complete(reviews.turn_completed)
            conversations.on_status(review_status(reviews))
        gateway.reviews = reviews
        if cron is not None:
            cron.bind(conversations)
            cron.service.attach(gateway.scheduler, settings.cron.tick_seconds)
            stack.push_async_callback(cron.service.aclose)
            gateway.cron = cron.service
        gateway.curator = schedule_curator(settings, db, model, clock, gateway.scheduler)
        before_start = await db.newest_inbox_id()
        for adapter in adapters:
            await adapter.start(conversations)
            stack.push_async_callback(adapter.stop)
        await delivery.resend_pending()
        await conversations.recover(up_to=before_start)
        if reviews is not None:
            await reviews.resume_unfinished()
        if gateway.cron is not None:
            await gateway.cron.recover()
        gateway.scheduler.start()
        stack.push_async_callback(gateway.scheduler.stop)
        gateway.ready = True
        try:
            yield gateway
        finally:
            gateway.ready = False


def _reviews(
    settings: Settings,
    db: SessionDB,
    model: ModelClient,
    conversations: Conversations,
    clock: Clock,
) -> ReviewService | None:
    """The background review, when it is on and has a tool to review with."""
    intervals = Intervals(
        memory=settings.memory.nudge_interval if settings.memory.enabled else 0,
        skills=settings.skills.nudge_interval if settings.skills.enabled else 0,
    )
    if not settings.review.enabled or not (intervals.memory or intervals.skills):
        return None
    policy = ReviewPolicy(
        intervals=intervals,
        concurrency=settings.review.concurrency,
        max_iterations=settings.review.max_iterations,
        notify=settings.review.notify,
    )

    async def notify(target: ChatTarget, texts: Sequence[str], session_id: str) -> None:
        await conversations.notify(target, texts, session_id=session_id)

    return ReviewService(
        db,
        model,
        conversations.runner.tools,
        clock,
        policy,
        until_idle=conversations.router.until_idle,
        notify=notify,
    )


def _conversations(
    settings: Settings,
    db: SessionDB,
    model: ModelClient,
    tools: Sequence[Tool],
    clock: Clock,
    memory: MemorySetup,
) -> Conversations:
    registry = ToolRegistry()
    commands = builtin_commands()
    memory.register(settings, registry, commands)
    if settings.search.enabled:
        registry.register(
            SessionSearchTool(
                db.search,
                allow_global=settings.search.allow_global,
                owners=settings.search.owners,
            )
        )
    approvals = SkillApprovals(settings.home)
    skills = SkillTools(
        settings.home / "skills",
        disabled=settings.skills.disabled,
        approvals=approvals if settings.skills.write_approval else None,
    )
    if settings.skills.enabled:
        for skill_tool in skills.tools(enabled_tools=[*registry.names(), *SKILL_TOOL_NAMES]):
            registry.register(skill_tool)
        for command in skill_commands(
            lambda platform: skills.library(platform, registry.names()),
            approvals,
            approval=settings.skills.write_approval,
        ):
            commands.register(command)
    for tool in tools:
        registry.register(tool)
    runner = TurnRunner(model, registry, clock, max_iterations=settings.sessions.max_iterations)
    return Conversations(
        db,
        runner,
        TieredPromptBuilder(
            settings.home,
            identity=settings.prompt.identity,
            context_max_chars=settings.prompt.context_max_chars,
        ),
        commands,
        clock,
        ConversationSettings(
            group_sessions_per_user=settings.sessions.group_sessions_per_user,
            group_sessions_by_platform=_group_session_overrides(settings),
            idle_worker_seconds=settings.sessions.idle_worker_seconds,
            compaction=_compaction(settings),
        ),
        caller_context_for=settings.caller_context,
        memory_blocks_for=_volatile_blocks(settings, skills, registry, memory),
        memory_providers=memory.providers,
    )


def _volatile_blocks(
    settings: Settings, skills: SkillTools, registry: ToolRegistry, memory: MemorySetup
) -> Callable[[InboundMessage], Sequence[str]]:
    """The skills index (when the skill tools are on), then the memory snapshots."""

    def blocks(msg: InboundMessage) -> Sequence[str]:
        index = skills.index(msg.platform, registry.names()) if settings.skills.enabled else ""
        return [b for b in (index, *memory.blocks_for(msg)) if b]

    return blocks


def _group_session_overrides(settings: Settings) -> dict[str, bool]:
    per_user = settings.discord.group_sessions_per_user
    return {} if per_user is None else {"discord": per_user}


def _compaction(settings: Settings) -> CompactionSettings | None:
    c = settings.compaction
    if not c.enabled:
        return None
    return CompactionSettings(
        context_window=c.context_window,
        threshold=c.threshold,
        keep_recent_messages=c.keep_recent_messages,
    )


def _announce_model(model: ModelClient) -> None:
    if model.provider == "offline":
        log.warning(
            "no model is configured: answering with the offline provider. Set "
            "OPENAI_BASE_URL, OPENAI_API_KEY and CHATGATE_MODEL (or ANTHROPIC_API_KEY)."
        )
    else:
        log.info("model: %s via %s", model.model, model.provider)
