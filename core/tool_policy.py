"""Which tools a chat may use: ``allow`` / ``deny`` globs, globally and per place.

Levels, from the least to the most specific: the profile, the platform, the route (a
webhook route's name), the chat (``platform:chat_id``). The most specific level that
sets ``allow`` decides the allow list; every level's ``deny`` applies, and a deny wins
over any allow. Globs are ``fnmatch`` patterns matched case-sensitively against tool
names, built-in and MCP alike (``mcp_*``, ``mcp_github_*``, ``cronjob``).

The policy decides what a new session is offered (``core.session_tools``), and a call
is checked against it again when it runs, so a tool the operator has since denied is
refused even in a session that was offered it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from fnmatch import fnmatchcase

from core.record import record


@record
class ToolRule:
    """One level's globs; ``allow`` None leaves the allow list to a broader level."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()


@record
class ToolPlace:
    """Where a tool would be used: the chat's platform, chat id and route."""

    platform: str
    chat_id: str
    route: str | None = None


@record
class ToolPolicy:
    """See the module docstring. The default allows every tool everywhere."""

    base: ToolRule = ToolRule(allow=("*",))
    platforms: Mapping[str, ToolRule] = field(default_factory=dict)
    routes: Mapping[str, ToolRule] = field(default_factory=dict)
    chats: Mapping[str, ToolRule] = field(default_factory=dict)

    def permits(self, name: str, place: ToolPlace) -> bool:
        allow, deny = self._globs(place)
        return _matches(name, allow) and not _matches(name, deny)

    def allowed(self, names: Iterable[str], place: ToolPlace) -> list[str]:
        """``names`` the policy lets ``place`` use, in their order."""
        allow, deny = self._globs(place)
        return [n for n in names if _matches(n, allow) and not _matches(n, deny)]

    def _globs(self, place: ToolPlace) -> tuple[Sequence[str], Sequence[str]]:
        rules = [self.base, self.platforms.get(place.platform)]
        if place.route is not None:
            rules.append(self.routes.get(place.route))
        rules.append(self.chats.get(f"{place.platform}:{place.chat_id}"))
        allow: Sequence[str] = ()
        deny: list[str] = []
        for rule in rules:
            if rule is None:
                continue
            if rule.allow is not None:
                allow = rule.allow
            deny += rule.deny
        return allow, deny


def _matches(name: str, globs: Iterable[str]) -> bool:
    return any(fnmatchcase(name, glob) for glob in globs)
