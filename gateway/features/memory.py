"""Memory: the bounded MEMORY.md / USER.md files, the ``memory`` tool and ``/memory``.

Each new session's volatile prompt tier gets a snapshot of the files; writes during the
session change disk, not the snapshot. With ``memory.write_approval`` every write is
staged until a person approves it (``/memory approve``, ``chatgate memory approve``).
The external provider beside the files is the ``memory_provider`` feature.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from adapters.platform import Section
from core.hooks import MEMORY_BLOCKS, PromptBlock
from core.memory.approval import PendingWrites
from core.memory.commands import memory_commands
from core.memory.memory_tool import MemoryTool
from core.memory.profile import MemoryFiles, MemoryLimits
from core.memory.status import memory_status
from gateway.features.base import Contribution, FeatureContext, FeatureSpec
from gateway.settings import Settings

GUIDANCE = (
    "You have a bounded, persistent memory (the `memory` tool). Save durable facts that "
    "will matter in later sessions: the user's stable preferences and details about "
    "themselves go to target 'user', your own notes about the environment and lessons "
    "learned go to target 'memory'. Do not save one-off task state or whole "
    "conversations. Writes take effect in the next session's prompt, not this one."
)

STARTER_CONFIG = """\
memory:
  enabled: true            # the `memory` tool and the MEMORY.md / USER.md prompt snapshot
  memory_chars: 2200       # budget of memories/MEMORY.md (the agent's notes)
  user_chars: 1375         # budget of memories/USER.md (the user profile)
  user_scope: profile      # profile: one USER.md; per_user: memories/users/<platform>-<user>.md
  write_approval: false    # stage each write in pending/memory/ until a person approves it
                           # (/memory approve <id|all>, chatgate memory approve)
  approvers: []            # who may approve/reject in chat, e.g. ["webhook:alice"];
                           # empty: the platform's owners (<platform>.owners)
  provider: ""             # an external memory provider beside the files, e.g. notes
  provider_options: {}     # notes: {max_results: 3, max_chars: 1500, scope: user}
  prefetch_max_chars: 100000     # the most provider recall one turn carries; more is cut
  prefetch_spill_enabled: false  # true: save oversized recall whole under spill/recall/
                                 # and show the model its head, tail and the file's path
  nudge_interval: 10       # user turns without a memory write before a memory review
"""


class MemorySettings(Section):
    enabled: bool = True
    memory_chars: int = Field(default=2200, ge=100, le=100_000)
    user_chars: int = Field(default=1375, ge=100, le=100_000)
    user_scope: Literal["profile", "per_user"] = "profile"
    # Stage every memory write for a person to approve (/memory approve, chatgate memory).
    write_approval: bool = False
    # Who may /memory approve and /memory reject in chat ("platform:user_id"); empty: owners.
    approvers: list[str] = Field(default_factory=list)
    # An external memory provider beside the built-in files, by name ("" = none).
    provider: str = ""
    provider_options: dict[str, Any] = Field(default_factory=dict)
    # The most provider recall one turn carries; longer recall is cut with a marker, or
    # with spilling on saved whole to a file and previewed (head, tail, path).
    prefetch_max_chars: int = Field(default=100_000, ge=1_000, le=10_000_000)
    prefetch_spill_enabled: bool = False
    # A background memory review after this many user turns without a memory write (0: off).
    nudge_interval: int = Field(default=10, ge=0, le=1000)

    def limits(self) -> MemoryLimits:
        return MemoryLimits(self.memory_chars, self.user_chars, self.user_scope)


class Memory:
    """The memory files of one home, as the gateway offers them."""

    def __init__(self, settings: MemorySettings, home: Path) -> None:
        self._settings = settings
        self._files = MemoryFiles(home, settings.limits())
        self._pending = PendingWrites(home)

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        m, files, pending = self._settings, self._files, self._pending
        yield Contribution(
            tools=[
                MemoryTool(
                    files,
                    pending if m.write_approval else None,
                    on_write=ctx.core.hooks.wrote_memory,  # the provider mirrors writes
                )
            ],
            commands=memory_commands(
                files,
                pending,
                approval=m.write_approval,
                approvers=m.approvers,
                on_write=ctx.core.hooks.wrote_memory,
            ),
            guidance={"memory": GUIDANCE},
            prompt_blocks=[
                PromptBlock(
                    lambda msg, _tools: files.snapshot(msg.platform, msg.user_id), MEMORY_BLOCKS
                )
            ],
            status_lines=[memory_status(ctx.db)],
        )


def build(settings: Settings) -> Memory | None:
    m = settings.section(MemorySettings)
    return Memory(m, settings.home) if m.enabled else None


SPEC = FeatureSpec("memory", build, settings=MemorySettings, starter_config=STARTER_CONFIG)
