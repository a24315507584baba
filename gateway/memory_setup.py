"""Memory as configured: the built-in files, write approval and the external provider.

Built before the server starts (``create_app``), so an unknown ``memory.provider`` is a
one-line configuration error rather than a failed start-up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from core.commands import CommandRegistry
from core.memory.approval import PendingWrites
from core.memory.commands import memory_commands
from core.memory.memory_tool import MemoryTool
from core.memory.profile import MemoryFiles
from core.memory.provider import MemoryProviders, load_provider
from core.messages import InboundMessage
from core.tools import ToolRegistry
from gateway.config import Settings


@dataclass(slots=True)
class MemorySetup:
    files: MemoryFiles | None
    pending: PendingWrites | None
    providers: MemoryProviders = field(default_factory=MemoryProviders)

    def register(self, settings: Settings, tools: ToolRegistry, commands: CommandRegistry) -> None:
        """Add the memory tools and the /memory commands."""
        m = settings.memory
        if self.files is not None and self.pending is not None:
            tools.register(MemoryTool(self.files, self.pending if m.write_approval else None))
            for command in memory_commands(
                self.files, self.pending, approval=m.write_approval, approvers=m.approvers
            ):
                commands.register(command)
        for tool in self.providers.tools():
            tools.register(tool)

    def blocks_for(self, msg: InboundMessage) -> Sequence[str]:
        """The built-in stores' snapshot for a new session of this person."""
        return self.files.snapshot(msg.platform, msg.user_id) if self.files else ()


def memory_setup(settings: Settings) -> MemorySetup:
    m = settings.memory
    if not m.enabled:
        return MemorySetup(files=None, pending=None)
    setup = MemorySetup(
        files=MemoryFiles(settings.home, m.limits()), pending=PendingWrites(settings.home)
    )
    if m.provider:
        external = load_provider(m.provider, m.provider_options, settings.home)
        if external is not None:
            setup.providers.register(external)
    return setup
