"""The core, assembled: ingress, lanes, turns, sessions and the outbox as one unit.

The gateway builds one ``Core`` per process and enters it as an async context
manager; features then add their tools, commands and hooks to its registries before
any adapter starts. Adapters see only ``ingress`` (the ``Inbox``) and ``ledger``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from types import TracebackType
from zoneinfo import ZoneInfo

from core.access import AccessPolicy, AccessRules
from core.approvals.commands import approval_commands
from core.approvals.rules import ApprovalRules
from core.approvals.service import Approvals
from core.audit.events import NO_AUDIT, AuditSink
from core.clock import Clock
from core.command_host import CoreCommandHost
from core.commands import CommandRegistry, builtin_commands
from core.crash_guard import CrashGuard
from core.hooks import TurnHooks
from core.ingress import Ingress, SessionPolicy
from core.ledger import DeliveryLedger
from core.media.intake import MediaIntake
from core.messages import ChatTarget, OutboundMessage
from core.models.base import ModelClient
from core.models.observed import ObservedModel
from core.outbox import Outbox
from core.pair_command import pair_command
from core.pairing import Pairings
from core.people.marks import ForgetMarks
from core.prompt.builder import PromptBuilder
from core.push_delivery import ReplySender
from core.rate_limit import ChatRateLimiter
from core.record import record
from core.router import SessionRouter
from core.session_tools import SessionTools
from core.sessions import CallerContextFor, SessionKeeper
from core.stats import CoreStats
from core.store.db import SessionDB
from core.streaming import Previews, Streaming
from core.telemetry import NO_TELEMETRY, Telemetry
from core.tool_policy import ToolPolicy
from core.tools import ToolRegistry
from core.turn import TurnRunner
from core.turn_commit import CommitPolicy, TurnCommitter
from core.turn_watch import TurnWatch
from core.turns import TurnProcessor, Work
from core.usage.budgets import BudgetRules, Budgets
from core.usage.command import usage_command
from core.usage.gate import BudgetGate
from core.usage.meter import Meter, MeteredModel
from core.usage.periods import Calendar
from core.usage.pricing import Pricing

log = logging.getLogger(__name__)


@record
class CoreSettings:
    """How the core runs turns and keeps sessions."""

    sessions: SessionPolicy = field(default_factory=SessionPolicy)
    # Per platform, who may talk to the agent (platforms not named are open).
    access: Mapping[str, AccessRules] = field(default_factory=dict)
    # A chat's lane worker exits after this long without work.
    idle_worker_seconds: float = 300.0
    # Estimated bytes of the transcripts kept in memory (``core.session_cache``).
    session_cache_bytes: int = 256 * 1024 * 1024
    # Model calls per turn before the tool loop gives up.
    max_iterations: int = 20
    # Tool calls run per turn; calls past it are answered "not run" and the turn stops.
    max_tool_calls_per_turn: int = 50
    # Which tools each chat is offered (``core.tool_policy``).
    tools: ToolPolicy = field(default_factory=ToolPolicy)
    # A turn's model calls and tools together; then it is failed with one line.
    turn_timeout_seconds: float = 300.0
    # The chat hears once that the answer is coming when a turn takes this long (0: never).
    slow_notice_seconds: float = 20.0
    # How long a turn keeps trying to commit while the store cannot write.
    commits: CommitPolicy = field(default_factory=CommitPolicy)
    # Which tool calls wait for a person's approval, who may give it, for how long.
    approvals: ApprovalRules = field(default_factory=ApprovalRules)
    # Show replies while they are generated where the chat's adapter can
    # (``streaming.enabled``; off wins over every platform's own setting).
    streaming: bool = True
    # Where forgettings list the session keys whose cached transcripts went stale
    # (``core.people.marks``); None: no other process forgets people here.
    forget_marks: Path | None = None
    # Prices per provider and model (``pricing:``) and caps on usage (``budgets:``).
    pricing: Pricing = field(default_factory=Pricing)
    budgets: BudgetRules = field(default_factory=BudgetRules)


class Core:
    """See the module docstring."""

    def __init__(
        self,
        db: SessionDB,
        model: ModelClient,
        prompts: PromptBuilder,
        hooks: TurnHooks,
        clock: Clock,
        senders: Mapping[str, ReplySender],
        settings: CoreSettings,
        *,
        caller_context_for: CallerContextFor,
        telemetry: Telemetry = NO_TELEMETRY,
        previews: Mapping[str, Previews] | None = None,
        intake: MediaIntake | None = None,
        audit: AuditSink = NO_AUDIT,
    ) -> None:
        self.stats = CoreStats()
        self.audit = audit
        self._streaming = Streaming(previews or {}, enabled=settings.streaming)
        self._intake = intake or MediaIntake()
        self._meter = Meter(db.usage, settings.pricing, clock, self.stats)
        model = ObservedModel(model, self.stats, telemetry)
        self.model = model = MeteredModel(model, self._meter)
        self.hooks = hooks
        self.tools = ToolRegistry()
        self.commands: CommandRegistry = builtin_commands()
        self.pairings = Pairings(db.pairing, clock, audit=audit)
        self.access = AccessPolicy(settings.access, self.pairings, clock)
        self.commands.register(pair_command(self.pairings))
        self.budgets = self._budgets(db, clock, settings)
        self.sessions = SessionKeeper(
            db,
            model,
            SessionTools(self.tools, settings.tools),
            prompts,
            clock,
            hooks,
            caller_context_for=caller_context_for,
            cache_bytes=settings.session_cache_bytes,
            marks=ForgetMarks(settings.forget_marks) if settings.forget_marks else None,
        )
        self.outbox = Outbox(db, clock, senders, self.stats, audit)
        self.approvals = self._approvals(db, clock, settings.approvals)
        host = CoreCommandHost(
            db, self.sessions, self.commands, hooks, model, self.access, self.approvals
        )
        processor = self._processor(db, host, clock, settings, telemetry)
        self._guard = CrashGuard(processor.handle, db, self.sessions, hooks, self.outbox, clock)
        self.ingress = self._front_door(db, processor, clock, settings)

    def _processor(
        self,
        db: SessionDB,
        host: CoreCommandHost,
        clock: Clock,
        settings: CoreSettings,
        telemetry: Telemetry,
    ) -> TurnProcessor:
        """The turn loop, its clock and the processor that commits what turns produce."""
        runner = TurnRunner(
            self.model,
            self.tools,
            clock,
            max_iterations=settings.max_iterations,
            max_tool_calls=settings.max_tool_calls_per_turn,
            telemetry=telemetry,
        )
        self._watch = TurnWatch(
            self.outbox,
            slow_notice_seconds=settings.slow_notice_seconds,
            turn_timeout_seconds=settings.turn_timeout_seconds,
        )
        return TurnProcessor(
            db,
            runner,
            self.sessions,
            self.hooks,
            host,
            self.outbox,
            clock,
            self.stats,
            self._watch,
            TurnCommitter(db, clock, settings.commits),
            self.approvals.gate,
            streaming=self._streaming,
            intake=self._intake,
            budgets=self.budgets,
        )

    def _budgets(self, db: SessionDB, clock: Clock, settings: CoreSettings) -> BudgetGate:
        """Budgets, the gate that stops work over them, and ``/usage``."""
        calendar = Calendar(ZoneInfo(settings.budgets.timezone))
        budgets = Budgets(db.usage, settings.budgets, calendar, clock)
        self.commands.register(usage_command(db.usage, calendar, clock))
        owners = {name: rules.owners for name, rules in settings.access.items()}
        return BudgetGate(
            budgets, db.usage, clock, owners, lambda to, texts: self.notify(to, texts)
        )

    def _approvals(self, db: SessionDB, clock: Clock, rules: ApprovalRules) -> Approvals:
        """Approvals in the chat, and their ``/approve`` and ``/deny``."""
        approvals = Approvals(
            db,
            self.outbox,
            self.access,
            clock,
            rules,
            destructive=self.tools.destructive,
            # The turn paused: whoever waits for it (a webhook request) hears it now.
            on_paused=lambda inbox_id, replies: self._router.resolve(inbox_id, replies),
            audit=self.audit,
        )
        for command in approval_commands(approvals):
            self.commands.register(command)
        return approvals

    def _front_door(
        self, db: SessionDB, processor: TurnProcessor, clock: Clock, settings: CoreSettings
    ) -> Ingress:
        """The lanes (behind the crash-loop guard and the rate limit) and the ingress."""
        limits = {name: rules.rate_limit_per_minute for name, rules in settings.access.items()}
        limiter = ChatRateLimiter(limits, clock, self.outbox)
        self._router: SessionRouter[Work] = SessionRouter(
            self._guard.handle,
            processor.cancelled,
            idle_seconds=settings.idle_worker_seconds,
            pace=limiter.pace,
            on_idle=self.sessions.idle,
        )
        return Ingress(
            db,
            self._router,
            processor,
            self.commands,
            self.stats,
            settings.sessions,
            self.access,
            limiter,
            clock,
            self.approvals,
            self.audit,
        )

    @property
    def ledger(self) -> DeliveryLedger:
        return self.outbox.ledger

    @property
    def active_lanes(self) -> int:
        """Sessions with a live worker."""
        return self._router.active_lanes

    @property
    def queued(self) -> int:
        """Messages waiting for their turn."""
        return self._router.queued

    async def until_idle(self, session_key: str) -> None:
        """Return once ``session_key`` has nothing running or queued."""
        await self._router.until_idle(session_key)

    async def notify(
        self, target: ChatTarget, texts: Sequence[str], *, session_id: str | None = None
    ) -> list[OutboundMessage]:
        """Send ``texts`` to a chat unprompted (``Outbox.notify``)."""
        return await self.outbox.notify(target, texts, session_id=session_id)

    async def drain(self, grace: float) -> None:
        """The gateway is stopping: stop intake (``Ingress.stop_intake``), let running
        turns finish for up to ``grace`` seconds, cancel the rest. Whatever is unfinished
        stays pending in the inbox and runs at the next start."""
        self.ingress.stop_intake()
        self.approvals.suspend()  # turns waiting for a person are stored: set them down
        running = self._router.running
        log.info("stopping: %d running turn(s) may finish within %g s", running, grace)
        cut = await self._router.drain(grace)
        await self._guard.release_cut()
        if cut:
            log.warning(
                "stopping: cancelled %d turn(s) still running after %g s; they run again at "
                "the next start",
                cut,
                grace,
            )

    async def recover(self, *, up_to: int) -> None:
        """After a restart: send what was committed but not delivered, then queue what
        was accepted but not processed (up to inbox id ``up_to``)."""
        await self.outbox.resend_pending()
        await self.ingress.recover(up_to=up_to)

    async def __aenter__(self) -> Core:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.ingress.close()
        self.approvals.suspend()
        await self._router.close()
        await self._watch.close()
        await self.outbox.close()
        await self._meter.flush()  # the usage of the last calls, before the store closes
