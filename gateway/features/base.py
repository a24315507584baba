"""The one protocol every feature implements, and what it may contribute.

A feature (memory, skills, search, the background review, cron...) is one module in
``gateway/features/`` exposing one ``FeatureSpec``:

- ``build(settings)`` runs before the server starts and reads the feature's settings:
  a bad setting is a ``ConfigError`` (one line, exit 2), never a failed start-up. It
  returns the ``Feature``, or None when the settings turn it off.
- ``Feature.open(ctx)`` is an async context manager entered once the core exists and
  before any platform starts. It yields a ``Contribution``: the tools, chat commands,
  prompt pieces, per-turn hooks and scheduled checks the feature brings, which the
  gateway adds to the core. Whatever it starts (tasks, services) it stops on exit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import field
from typing import Literal, Protocol

from adapters.platform import Section
from core.assembly import Core
from core.clock import Clock
from core.commands import Command
from core.hooks import (
    BeforeTurn,
    MemoryWritten,
    PreCompress,
    PromptBlock,
    ReplyMedia,
    SessionEnded,
    SessionStarted,
    SlashClaim,
    StatusLines,
    TurnDone,
    TurnMaterial,
)
from core.models.base import ModelClient
from core.record import record
from core.scheduler import Scheduler
from core.skills.store import SkillStore
from core.store.db import SessionDB
from core.tools import Tool
from gateway.settings import Settings


@record
class Job:
    """A periodic check the gateway's scheduler runs (``core.scheduler.Scheduler.every``)."""

    id: str
    name: str
    every_seconds: float
    check: Callable[[], Awaitable[object]]
    # Seconds until the first run (None: one period).
    first_in: float | None = None


@record
class Metric:
    """One Prometheus family, read at scrape time: a counter or gauge, with or without a
    label (``values`` maps label value -> number)."""

    name: str
    doc: str
    kind: Literal["counter", "gauge"]
    values: Mapping[str, float] | float
    label: str = ""


@record
class Contribution:
    """What one feature adds to the core; see ``core.hooks`` for when each hook runs."""

    tools: Sequence[Tool] = ()
    commands: Sequence[Command] = ()
    # Stable prompt tier text per tool name, included when the tool is offered.
    guidance: Mapping[str, str] = field(default_factory=dict)
    prompt_blocks: Sequence[PromptBlock] = ()
    before_turn: Sequence[BeforeTurn] = ()
    turn_material: Sequence[TurnMaterial] = ()
    slash_claims: Sequence[SlashClaim] = ()
    turn_done: Sequence[TurnDone] = ()
    session_started: Sequence[SessionStarted] = ()
    session_ended: Sequence[SessionEnded] = ()
    status_lines: Sequence[StatusLines] = ()
    pre_compress: Sequence[PreCompress] = ()
    memory_written: Sequence[MemoryWritten] = ()
    reply_media: Sequence[ReplyMedia] = ()
    jobs: Sequence[Job] = ()
    # After a restart, once the inbox is recovered: pick up what the last process left.
    recover: Callable[[], Awaitable[object]] | None = None
    metrics: Callable[[], Iterable[Metric]] | None = None


@record
class FeatureContext:
    """What a feature may use while it runs."""

    settings: Settings
    db: SessionDB
    # The one writer of the home's skills folder (the skill tools, approvals, curator).
    skills: SkillStore
    model: ModelClient
    clock: Clock
    core: Core
    scheduler: Scheduler


class Feature(Protocol):
    """A feature built for these settings (see the module docstring)."""

    def open(self, ctx: FeatureContext) -> AbstractAsyncContextManager[Contribution]: ...


@record
class FeatureSpec:
    """One feature, as ``gateway.features.FEATURES`` lists it."""

    name: str
    build: Callable[[Settings], Feature | None]
    # The model of the ``<name>:`` section it owns in config.yaml, if any.
    settings: type[Section] | None = None
    # The commented ``<name>:`` block ``chatgate init`` writes.
    starter_config: str = ""
