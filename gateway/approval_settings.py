"""The approval keys of the ``tools:`` section: which tool calls wait for a person's
approval (``core.approvals``). ``gateway.tool_settings.ToolSettings`` (which tools a chat
is offered) extends this block into the whole section.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from adapters.platform import Section, split_commas
from core.approvals.rules import ApprovalRules

_APPROVER = re.compile(r"[a-z0-9_.-]+:\S+")


class ApprovalSettings(Section):
    """Approvals in the chat."""

    # Tool-name globs (``mcp_fs_write_*``) whose calls wait for a person's approval;
    # tools their MCP server marks destructive always wait.
    require_approval: list[str] = Field(default_factory=list)
    # Who may approve, besides each platform's owners: ``platform:user_id`` entries.
    approvers: list[str] = Field(default_factory=list)
    # Seconds an approval waits for a decision before the call is denied.
    approval_timeout_seconds: float = Field(default=300.0, gt=0, le=7 * 86_400)

    @field_validator("require_approval", mode="before")
    @classmethod
    def _globs(cls, value: object) -> object:
        return split_commas(value)

    @field_validator("approvers", mode="before")
    @classmethod
    def _approver_list(cls, value: object) -> object:
        value = split_commas(value)
        if isinstance(value, list):
            for entry in value:
                if not isinstance(entry, str) or not _APPROVER.fullmatch(entry):
                    raise ValueError(f"{entry!r} is not platform:user_id (e.g. webhook:alice)")
        return value

    def rules(self) -> ApprovalRules:
        return ApprovalRules(
            require=tuple(self.require_approval),
            approvers=frozenset(self.approvers),
            timeout_seconds=self.approval_timeout_seconds,
        )
