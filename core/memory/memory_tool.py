"""The ``memory`` tool as the turn loop registers it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from core.memory.approval import PendingWrites
from core.memory.profile import MemoryFiles
from core.memory.tool import MEMORY_TOOL_SCHEMA, memory_tool_call
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

    def __init__(self, files: MemoryFiles, pending: PendingWrites | None = None) -> None:
        self._files = files
        self._pending = pending

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        stores = self._files.stores_for(ctx.platform, ctx.user_id)
        # File lock, fsync and replace block: keep them off the event loop.
        payload = await asyncio.to_thread(memory_tool_call, args, stores, self._pending)
        return json.dumps(payload, ensure_ascii=False)
