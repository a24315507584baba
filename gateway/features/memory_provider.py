"""The external memory provider beside the files (``memory.provider``), at most one.

Chosen by name: a built-in (``notes``) or a package's entry point in the
``chatgate.memory_providers`` group. It is built before the server starts, so an
unknown name or a bad option is a one-line configuration error. It gets its own
block in the volatile prompt tier, its tools, recall for each turn (fenced in the API
copy of the user message), and each finished exchange, synced in the background.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from core.hooks import EXTERNAL_BLOCKS, PromptBlock
from core.memory.provider import MemoryProvider, MemoryProviders, fence, load_provider
from core.messages import InboundMessage
from core.session_state import SessionState
from core.store.records import InboxItem, SessionRow
from core.tasks import TaskSet
from core.turn import TurnResult
from gateway.features.base import Contribution, FeatureContext, FeatureSpec
from gateway.features.memory import MemorySettings
from gateway.settings import Settings


class ExternalMemory:
    """One provider, every hook contained (``MemoryProviders``)."""

    def __init__(self, provider: MemoryProvider) -> None:
        self._providers = MemoryProviders()
        self._providers.register(provider)
        self._syncs = TaskSet("memory-sync")

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        providers = self._providers
        try:
            yield Contribution(
                tools=providers.tools(),
                prompt_blocks=[
                    PromptBlock(lambda _msg: providers.system_prompt_blocks(), EXTERNAL_BLOCKS)
                ],
                turn_material=[self._recall],
                turn_done=[self._sync],
                session_started=[self._started],
                session_ended=[providers.on_session_end],
            )
        finally:
            await self._syncs.close()

    async def _started(self, row: SessionRow) -> None:
        await self._providers.initialize(row.id, platform=row.platform, user_id=row.user_id or "")

    async def _recall(self, msg: InboundMessage, row: SessionRow) -> str | None:
        recall = await self._providers.prefetch(msg.text, session_id=row.id)
        return fence(recall) if recall.strip() else None

    async def _sync(self, state: SessionState, item: InboxItem, result: TurnResult) -> None:
        # In the background: the reply is out, and a slow backend must not hold the lane.
        self._syncs.spawn(
            self._providers.sync_turn(item.message.text, result.reply, session_id=state.row.id),
            name=f"memory-sync:{item.session_key}",
        )


def build(settings: Settings) -> ExternalMemory | None:
    m = settings.section(MemorySettings)
    if not (m.enabled and m.provider):
        return None
    provider = load_provider(m.provider, m.provider_options, settings.home)
    return ExternalMemory(provider) if provider is not None else None


SPEC = FeatureSpec("memory_provider", build)
