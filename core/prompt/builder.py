"""The system prompt: built once per session from three tiers, then stored verbatim.

``stable`` holds identity and tool guidance, ``context`` the caller's system message,
``volatile`` the per-session metadata. The tiers are joined once with blank lines;
the session row keeps the exact bytes, so every later turn and every restart sends
the same prefix and provider prompt caches keep hitting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

DEFAULT_IDENTITY = (
    "You are a helpful assistant reached through chatgate, a messaging gateway. "
    "You talk with people in ongoing chats; be direct, accurate and brief, and say "
    "plainly when you do not know something."
)

MEMORY_GUIDANCE = (
    "You have a bounded, persistent memory (the `memory` tool). Save durable facts that "
    "will matter in later sessions: the user's stable preferences and details about "
    "themselves go to target 'user', your own notes about the environment and lessons "
    "learned go to target 'memory'. Do not save one-off task state or whole "
    "conversations. Writes take effect in the next session's prompt, not this one."
)

PLATFORM_HINTS = {
    "webhook": "Replies are delivered as plain text over an HTTP webhook.",
    "terminal": "You are talking in a terminal; plain text and simple markdown render well.",
    "telegram": "You are on Telegram: keep replies short; markdown is converted for Telegram.",
    "discord": "You are on Discord: messages over 2,000 characters are split; markdown works.",
}


@dataclass(frozen=True, slots=True)
class PromptContext:
    """What the builder may know about the session it builds for."""

    session_id: str
    platform: str
    provider: str
    model: str
    started_at: float
    tool_names: Sequence[str] = ()
    system_message: str | None = None
    # MEMORY.md / USER.md rendered once at session start (the frozen snapshot).
    memory_blocks: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class PromptParts:
    stable: str
    context: str
    volatile: str

    def join(self) -> str:
        return "\n\n".join(p for p in (self.stable, self.context, self.volatile) if p)

    def sizes(self) -> dict[str, int]:
        """Byte size of each tier (UTF-8), as ``/status`` reports them."""
        return {
            "stable": len(self.stable.encode()),
            "context": len(self.context.encode()),
            "volatile": len(self.volatile.encode()),
        }


class PromptBuilder(Protocol):
    def build(self, ctx: PromptContext) -> PromptParts: ...


class BasicPromptBuilder:
    """Identity, platform hint, caller system message and session metadata."""

    def __init__(self, identity: str = "") -> None:
        self._identity = identity.strip() or DEFAULT_IDENTITY

    def build(self, ctx: PromptContext) -> PromptParts:
        stable = [self._identity]
        if "memory" in ctx.tool_names:
            stable.append(MEMORY_GUIDANCE)
        hint = PLATFORM_HINTS.get(ctx.platform)
        if hint:
            stable.append(hint)
        started = datetime.fromtimestamp(ctx.started_at, tz=UTC)
        metadata = (
            # The date only, so the bytes stay the same all day long.
            f"Conversation started: {started:%A, %B} {started.day}, {started.year}\n"
            f"Session: {ctx.session_id}\n"
            f"Model: {ctx.model} ({ctx.provider})"
        )
        return PromptParts(
            stable="\n\n".join(stable),
            context=(ctx.system_message or "").strip(),
            volatile="\n\n".join([*ctx.memory_blocks, metadata]),
        )
