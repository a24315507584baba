"""Which tool calls need a person's approval, and who may give it."""

from __future__ import annotations

from dataclasses import field
from fnmatch import fnmatchcase

from core.record import record


@record
class ApprovalRules:
    """``tools.require_approval``, ``tools.approvers`` and ``tools.approval_timeout_seconds``."""

    # Globs over tool names (``mcp_fs_*``); a tool marked destructive asks anyway.
    require: tuple[str, ...] = ()
    # ``platform:user_id`` of people who may decide, besides the bot's owners.
    approvers: frozenset[str] = field(default_factory=frozenset)
    # No decision within this long denies the call.
    timeout_seconds: float = 300.0

    def required(self, tool_name: str, *, destructive: bool) -> bool:
        """Whether a call of ``tool_name`` waits for a person."""
        return destructive or any(fnmatchcase(tool_name, glob) for glob in self.require)

    def approver(self, platform: str, user_id: str) -> bool:
        return f"{platform}:{user_id}" in self.approvers
