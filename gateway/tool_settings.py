"""The ``tools:`` section: which tools each chat is offered (``core.tool_policy``).

Globally ``allow`` / ``deny``; then per platform, per route (a webhook route's name) and
per chat (``"platform:chat_id"``), each with its own ``allow`` and ``deny``. The most
specific level that sets ``allow`` decides the allow list; every level's ``deny``
applies, and deny wins. From the environment: ``CHATGATE_TOOLS__ALLOW`` /
``CHATGATE_TOOLS__DENY`` as JSON lists or comma-separated text, ``CHATGATE_TOOLS__PLATFORMS``
(``__ROUTES``, ``__CHATS``) as JSON objects.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from pydantic import Field, field_validator

from adapters.platform import Section, split_commas
from core.errors import ConfigError
from core.tool_policy import ToolPolicy, ToolRule
from gateway.approval_settings import ApprovalSettings


def _globs(value: list[str] | None) -> list[str] | None:
    for glob in value or ():
        if not glob.strip() or glob != glob.strip():
            raise ValueError(f"{glob!r} is not a tool-name glob (empty or padded)")
    return value


class ToolRuleSettings(Section):
    """One level's globs; no ``allow`` leaves the allow list to a broader level."""

    allow: list[str] | None = None
    deny: list[str] = Field(default_factory=list)

    _split = field_validator("allow", "deny", mode="before")(split_commas)
    _checked = field_validator("allow", "deny")(_globs)

    def rule(self) -> ToolRule:
        allow = tuple(self.allow) if self.allow is not None else None
        return ToolRule(allow=allow, deny=tuple(self.deny))


class ToolSettings(ApprovalSettings):
    """The ``tools:`` section: the tool policy here, the approval keys inherited."""

    # Globs over tool names, built-in and MCP (mcp_<server>_<tool>) alike.
    allow: list[str] = Field(default_factory=lambda: ["*"])
    deny: list[str] = Field(default_factory=list)
    # Narrower levels, each {allow?, deny?}: by platform name, by route, by
    # "platform:chat_id".
    platforms: dict[str, ToolRuleSettings] = Field(default_factory=dict)
    routes: dict[str, ToolRuleSettings] = Field(default_factory=dict)
    chats: dict[str, ToolRuleSettings] = Field(default_factory=dict)

    _split = field_validator("allow", "deny", mode="before")(split_commas)
    _checked = field_validator("allow", "deny")(_globs)

    @field_validator("chats")
    @classmethod
    def _chat_keys(cls, value: dict[str, ToolRuleSettings]) -> dict[str, ToolRuleSettings]:
        for key in value:
            platform, _, chat_id = key.partition(":")
            if not platform or not chat_id:
                raise ValueError(f"{key!r} is not a chat key; write it as platform:chat_id")
        return value

    def policy(self) -> ToolPolicy:
        return ToolPolicy(
            base=ToolRule(allow=tuple(self.allow), deny=tuple(self.deny)),
            platforms=_rules(self.platforms),
            routes=_rules(self.routes),
            chats=_rules(self.chats),
        )

    def check_platforms(self, known: Collection[str]) -> None:
        """A ``ConfigError`` for a platform name no registered platform has."""
        named = [("platforms", name) for name in self.platforms]
        named += [("chats", key) for key in self.chats]
        for level, key in named:
            name = key.partition(":")[0]
            if name not in known:
                choices = ", ".join(sorted(known)) or "none"
                raise ConfigError(
                    f"tools.{level}.{key}", f"no platform {name!r} (known: {choices})"
                )


def _rules(levels: Mapping[str, ToolRuleSettings]) -> dict[str, ToolRule]:
    return {key: level.rule() for key, level in levels.items()}
