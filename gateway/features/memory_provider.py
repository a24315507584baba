"""The external memory provider beside the files (``memory.provider``), at most one.

Chosen by name: a built-in (``notes``) or a package's entry point in the
``chatgate.memory_providers`` group. It is built before the server starts, so an
unknown name or a bad option is a one-line configuration error. It gets its own
block in the volatile prompt tier, its tools, recall for each turn (fenced in the API
copy of the user message), and each finished exchange, synced in the background; and,
when it has those hooks, each turn's start, the messages compaction is about to
summarise, and each write the ``memory`` tool applies to the built-in files.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from core.compaction import message_dicts
from core.hooks import EXTERNAL_BLOCKS, PromptBlock
from core.memory.provider import MemoryProvider, MemoryProviders, fence, load_provider
from core.memory.recall_limit import SPILL_DIR, RecallCeiling
from core.messages import InboundMessage
from core.session_state import SessionState
from core.store.records import InboxItem, SessionRow, StoredMessage
from core.tasks import TaskSet
from core.turn import TurnResult
from gateway.features.base import Contribution, FeatureContext, FeatureSpec
from gateway.features.memory import MemorySettings
from gateway.settings import Settings


class ExternalMemory:
    """One provider, every hook contained (``MemoryProviders``)."""

    def __init__(self, provider: MemoryProvider, ceiling: RecallCeiling) -> None:
        self._providers = MemoryProviders(ceiling=ceiling)
        self._providers.register(provider)
        self._syncs = TaskSet("memory-sync")

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        providers = self._providers
        try:
            yield Contribution(
                tools=providers.tools(),
                prompt_blocks=[
                    PromptBlock(
                        lambda _msg, _tools: providers.system_prompt_blocks(), EXTERNAL_BLOCKS
                    )
                ],
                turn_material=[self._recall],
                turn_done=[self._sync],
                session_started=[self._started],
                session_ended=[providers.on_session_end],
                pre_compress=[self._pre_compress],
                memory_written=[providers.on_memory_write],
            )
        finally:
            await self._syncs.close()

    async def _started(self, row: SessionRow) -> None:
        await self._providers.initialize(row.id, platform=row.platform, user_id=row.user_id or "")

    async def _recall(self, msg: InboundMessage, row: SessionRow) -> str | None:
        # Each model turn asks for its material once, so this is where a turn starts.
        await self._providers.on_turn_start(row.turn_count + 1, msg.text, row=row)
        recall = await self._providers.prefetch(msg.text, session_id=row.id)
        return fence(recall) if recall.strip() else None

    async def _pre_compress(self, row: SessionRow, older: Sequence[StoredMessage]) -> str:
        return await self._providers.on_pre_compress(message_dicts(older), session_id=row.id)

    async def _sync(self, state: SessionState, item: InboxItem, result: TurnResult) -> None:
        # In the background: the reply is out, and a slow backend must not hold the lane.
        self._syncs.spawn(
            self._providers.sync_turn(
                item.message.text,
                result.reply,
                session_id=state.row.id,
                author=(item.message.platform, item.message.user_id),
            ),
            name=f"memory-sync:{item.session_key}",
        )


def build(settings: Settings) -> ExternalMemory | None:
    m = settings.section(MemorySettings)
    if not (m.enabled and m.provider):
        return None
    provider = load_provider(m.provider, m.provider_options, settings.home)
    if provider is None:
        return None
    spill_to = settings.home / SPILL_DIR if m.prefetch_spill_enabled else None
    return ExternalMemory(provider, RecallCeiling(m.prefetch_max_chars, spill_to))


SPEC = FeatureSpec("memory_provider", build)
