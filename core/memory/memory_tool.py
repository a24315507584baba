"""The ``memory`` tool as the turn loop registers it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from core.memory.approval import PendingWrites
from core.memory.operations import Operation
from core.memory.profile import MemoryFiles
from core.memory.store import Result
from core.memory.tool import MEMORY_TOOL_SCHEMA, memory_tool_call
from core.memory.writes import MemoryWrite, OnMemoryWrite, applied_writes
from core.models.base import ToolSpec
from core.tools import ToolContext

SPEC = ToolSpec(
    name=MEMORY_TOOL_SCHEMA["name"],
    description=MEMORY_TOOL_SCHEMA["description"],
    parameters=MEMORY_TOOL_SCHEMA["parameters"],
)


class MemoryTool:
    """Writes go to disk at once (or to ``pending`` for approval when given); the running
    session's prompt snapshot never changes."""

    spec = SPEC

    def __init__(
        self,
        files: MemoryFiles,
        pending: PendingWrites | None = None,
        *,
        on_write: OnMemoryWrite | None = None,
    ) -> None:
        self._files = files
        self._pending = pending
        self._on_write = on_write

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        stores = self._files.stores_for(ctx.platform, ctx.user_id)
        applied: list[MemoryWrite] = []

        def record(target: str, result: Result, operations: tuple[Operation, ...]) -> None:
            applied.extend(applied_writes(target, result.before, operations, ctx.session_id))

        # File lock, fsync and replace block: keep them off the event loop.
        payload = await asyncio.to_thread(
            memory_tool_call, args, stores, self._pending, on_applied=record
        )
        if self._on_write is not None:
            for write in applied:  # on disk already: the hook only mirrors it
                await self._on_write(write)
        return json.dumps(payload, ensure_ascii=False)
