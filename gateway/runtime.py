"""The running gateway: SessionDB, model, core and adapters, started and stopped as one."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field

from adapters.base import Adapter
from core import compaction
from core.assembly import Core, CoreSettings
from core.clock import Clock, SystemClock
from core.compaction import CompactionSettings
from core.cron.service import CronService
from core.curator.service import Curator
from core.hooks import (
    EXTERNAL_BLOCKS,
    INDEX_BLOCKS,
    MEMORY_BLOCKS,
    BeforeTurn,
    PromptBlock,
    TurnHooks,
    TurnStart,
)
from core.ingress import SessionPolicy
from core.memory.provider import fence
from core.memory.status import memory_status
from core.messages import ChatTarget, InboundMessage
from core.models.base import ChatMessage, ModelClient
from core.models.factory import build_model_client
from core.prompt.builder import TieredPromptBuilder
from core.prompt.texts import PLATFORM_HINTS, TOOL_GUIDANCE
from core.review.cadence import Intervals
from core.review.service import ReviewPolicy, ReviewService
from core.review.status import review_status
from core.scheduler import Scheduler
from core.search.tool import SessionSearchTool
from core.session_state import SessionState
from core.skills.approval import SkillApprovals
from core.skills.commands import skill_commands
from core.skills.slash import slash_loader
from core.skills.store import SkillStore
from core.skills.tools import SKILL_TOOL_NAMES, SkillTools
from core.store.db import SessionDB
from core.store.records import InboxItem, SessionRow
from core.store.schema_version import upgrade_schema
from core.tasks import TaskSet
from core.tools import Tool
from core.turn import TurnResult
from gateway.config import Settings
from gateway.memory_setup import MemorySetup, memory_setup
from gateway.scheduling import CronWiring, schedule_curator

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Gateway:
    """Everything a running gateway holds; built by ``open_gateway``."""

    settings: Settings
    db: SessionDB
    core: Core
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
        hooks = TurnHooks()
        prompts = TieredPromptBuilder(
            settings.home,
            identity=settings.prompt.identity,
            context_max_chars=settings.prompt.context_max_chars,
            tool_guidance=TOOL_GUIDANCE,
            platform_hints=PLATFORM_HINTS,
        )
        core = await stack.enter_async_context(
            Core(
                db,
                model,
                prompts,
                hooks,
                clock,
                {a.name: a for a in adapters},
                _core_settings(settings),
                caller_context_for=settings.caller_context,
            )
        )
        background = TaskSet("memory-sync")
        stack.push_async_callback(background.close)
        cron = CronWiring(settings, db, clock) if settings.cron.enabled else None
        # One store for every writer of the skills folder, so each write shows in the index.
        skills = SkillStore(settings.home / "skills")
        _wire(settings, core, db, memory or memory_setup(settings), background, skills)
        for tool in [cron.tool, *tools] if cron is not None else tools:
            core.tools.register(tool)
        gateway = Gateway(settings, db, core, model, {a.name: a for a in adapters})
        reviews = _reviews(settings, db, model, core, clock)
        if reviews is not None:
            stack.push_async_callback(reviews.close)
            hooks.turn_done.append(reviews.turn_completed)
            hooks.status_lines.append(review_status(reviews))
        gateway.reviews = reviews
        if cron is not None:
            cron.bind(core)
            cron.service.attach(gateway.scheduler, settings.cron.tick_seconds)
            stack.push_async_callback(cron.service.aclose)
            gateway.cron = cron.service
        gateway.curator = schedule_curator(settings, db, model, clock, gateway.scheduler, skills)
        before_start = await db.newest_inbox_id()
        for adapter in adapters:
            await adapter.start(core.ingress, core.ledger)
            stack.push_async_callback(adapter.stop)
        await core.recover(up_to=before_start)
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
    core: Core,
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
        await core.notify(target, texts, session_id=session_id)

    return ReviewService(
        db,
        model,
        core.tools,
        clock,
        policy,
        until_idle=core.until_idle,
        notify=notify,
    )


def _wire(
    settings: Settings,
    core: Core,
    db: SessionDB,
    memory: MemorySetup,
    background: TaskSet,
    skill_store: SkillStore,
) -> None:
    registry, commands, hooks = core.tools, core.commands, core.hooks
    memory.register(settings, registry, commands)
    providers = memory.providers
    if settings.memory.enabled:
        hooks.status_lines.append(memory_status(db))

    async def started(row: SessionRow) -> None:
        await providers.initialize(row.id, platform=row.platform, user_id=row.user_id or "")

    async def recall(msg: InboundMessage, row: SessionRow) -> str | None:
        found = await providers.prefetch(msg.text, session_id=row.id)
        return fence(found) if found.strip() else None

    async def sync(state: SessionState, item: InboxItem, result: TurnResult) -> None:
        background.spawn(
            providers.sync_turn(item.message.text, result.reply, session_id=state.row.id),
            name=f"memory-sync:{item.session_key}",
        )

    hooks.session_started.append(started)
    hooks.session_ended.append(providers.on_session_end)
    hooks.turn_material.append(recall)
    hooks.turn_done.append(sync)
    hooks.prompt_blocks.append(PromptBlock(lambda _msg: memory.blocks_for(_msg), MEMORY_BLOCKS))
    hooks.prompt_blocks.append(
        PromptBlock(lambda _msg: providers.system_prompt_blocks(), EXTERNAL_BLOCKS)
    )
    _wire_skills_and_search(settings, core, db, skill_store)
    if settings.compaction.enabled:
        hooks.before_turn.append(_compaction_hook(settings, core))


def _wire_skills_and_search(
    settings: Settings, core: Core, db: SessionDB, skill_store: SkillStore
) -> None:
    registry, commands, hooks = core.tools, core.commands, core.hooks
    if settings.search.enabled:
        registry.register(
            SessionSearchTool(
                db.search,
                allow_global=settings.search.allow_global,
                owners=settings.search.owners,
            )
        )
    approvals = SkillApprovals(settings.home, skill_store)
    skills = SkillTools(
        skill_store,
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
        hooks.prompt_blocks.append(
            PromptBlock(lambda msg: [skills.index(msg.platform, registry.names())], INDEX_BLOCKS)
        )
        load = slash_loader(settings.home / "skills", settings.skills.disabled, registry.names)

        async def skill(msg: InboundMessage, row: SessionRow) -> str | None:
            return await load(msg.text, msg.platform)

        hooks.turn_material.append(skill)


def _compaction_hook(settings: Settings, core: Core) -> BeforeTurn:
    c = settings.compaction
    policy = CompactionSettings(
        context_window=c.context_window,
        threshold=c.threshold,
        keep_recent_messages=c.keep_recent_messages,
    )

    async def compact_if_due(start: TurnStart, item: InboxItem) -> None:
        state = start.state
        upcoming = compaction.message_chars([ChatMessage(role="user", content=item.message.text)])
        chars = len(state.row.system_prompt) + state.history_chars() + upcoming
        if not compaction.exceeds(policy, chars):
            return
        compacted = await core.sessions.compact(state, item, keep=policy.keep_recent_messages)
        if compacted is not None:
            start.state = compacted
            start.notices.append(compaction.NOTICE)

    return compact_if_due


def _core_settings(settings: Settings) -> CoreSettings:
    per_user = settings.discord.group_sessions_per_user
    return CoreSettings(
        sessions=SessionPolicy(
            group_sessions_per_user=settings.sessions.group_sessions_per_user,
            by_platform={} if per_user is None else {"discord": per_user},
        ),
        idle_worker_seconds=settings.sessions.idle_worker_seconds,
        max_iterations=settings.sessions.max_iterations,
    )


def _announce_model(model: ModelClient) -> None:
    if model.provider == "offline":
        log.warning(
            "no model is configured: answering with the offline provider. Set "
            "OPENAI_BASE_URL, OPENAI_API_KEY and CHATGATE_MODEL (or ANTHROPIC_API_KEY)."
        )
    else:
        log.info("model: %s via %s", model.model, model.provider)
