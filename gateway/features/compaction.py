"""Compaction: when a session outgrows the model's context, continue in a child session.

Before each turn: if the next request would pass ``compaction.threshold`` of
``compaction.context_window`` (estimated at four characters a token), the older turns
are summarised into a child session and the person is told so. ``/compact`` does it by
hand whether or not this is on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pydantic import Field

from adapters.platform import Section
from core import compaction
from core.compaction import CompactionSettings
from core.hooks import TurnStart
from core.models.base import ChatMessage
from core.sessions import SessionKeeper
from core.store.records import InboxItem
from gateway.features.base import Contribution, FeatureContext, FeatureSpec
from gateway.settings import Settings

STARTER_CONFIG = """\
compaction:
  enabled: true            # summarise older turns into a child session when context runs out
  context_window: 128000   # the model's context window, in tokens
  threshold: 0.8           # compact when the next request would exceed this share of it
  keep_recent_messages: 10 # messages carried verbatim into the child session
"""


class CompactionConfig(Section):
    enabled: bool = True
    # The model's context window in tokens, and the share of it that triggers compaction.
    context_window: int = Field(default=128_000, ge=1_000)
    threshold: float = Field(default=0.8, gt=0, le=1)
    keep_recent_messages: int = Field(default=10, ge=0, le=1_000)


class Compaction:
    def __init__(self, c: CompactionConfig) -> None:
        self._policy = CompactionSettings(
            context_window=c.context_window,
            threshold=c.threshold,
            keep_recent_messages=c.keep_recent_messages,
        )
        self._sessions: SessionKeeper | None = None

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        self._sessions = ctx.core.sessions
        yield Contribution(before_turn=[self._compact_if_due])

    async def _compact_if_due(self, start: TurnStart, item: InboxItem) -> None:
        state, policy = start.state, self._policy
        upcoming = compaction.message_chars([ChatMessage(role="user", content=item.message.text)])
        chars = len(state.row.system_prompt) + state.history_chars() + upcoming
        if self._sessions is None or not compaction.exceeds(policy, chars):
            return
        compacted = await self._sessions.compact(state, item, keep=policy.keep_recent_messages)
        if compacted is not None:
            start.state = compacted
            start.notices.append(compaction.NOTICE)


def build(settings: Settings) -> Compaction | None:
    c = settings.section(CompactionConfig)
    return Compaction(c) if c.enabled else None


SPEC = FeatureSpec("compaction", build, settings=CompactionConfig, starter_config=STARTER_CONFIG)
