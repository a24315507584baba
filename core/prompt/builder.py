"""The system prompt: built once per session from three tiers, then stored verbatim.

Tiers are ordered by how likely their bytes are to stay the same, so a change near the
end of the prompt leaves the longest possible prefix cached by the provider:

- ``stable``: identity (``$CHATGATE_HOME/SOUL.md`` or the built-in one), guidance for
  each offered tool (from the feature that offers it), task-completion guidance and the
  platform hint (from the platform's registry entry). Changes only with a release or
  an edited SOUL.md.
- ``context``: the caller's system message (a webhook route's), then the project
  context of the chat's workspace folder. Fixed for a workspace.
- ``volatile``: the memory snapshots (MEMORY.md, USER.md), the external memory
  provider's block and the session metadata. Differs from session to session.

The tiers are joined once with blank lines; the session row keeps the exact bytes, so
every later turn and every restart sends the same prefix. Per-turn recall never enters
here: it goes into the API copy of the user message (``compose_user_api_content``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from core.memory.threats import scan
from core.prompt.context_files import project_context
from core.prompt.texts import DEFAULT_IDENTITY, TASK_COMPLETION
from core.record import record


@record
class CallerContext:
    """What the caller of a chat adds: a system message and a workspace folder."""

    system_message: str | None = None
    workspace: Path | None = None


@record
class PromptContext:
    """What the builder may know about the session it builds for."""

    session_id: str
    platform: str
    provider: str
    model: str
    started_at: float
    tool_names: Sequence[str] = ()
    caller: CallerContext = CallerContext()
    # MEMORY.md / USER.md and the provider's block, rendered once at session start.
    memory_blocks: Sequence[str] = ()


@record
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


class TieredPromptBuilder:
    """Builds the three tiers; see the module docstring for what goes where and why."""

    def __init__(
        self,
        home: Path,
        *,
        identity: str = "",
        context_max_chars: int = 20_000,
        tool_guidance: Mapping[str, str] | None = None,
        platform_hints: Mapping[str, str] | None = None,
    ) -> None:
        """``tool_guidance`` (by tool name) and ``platform_hints`` (by platform name) are
        read at each build: features and platforms may fill them after construction."""
        self._home = home
        self._identity = identity.strip()
        self._context_max_chars = context_max_chars
        self._guidance = tool_guidance if tool_guidance is not None else {}
        self._hints = platform_hints if platform_hints is not None else {}

    def build(self, ctx: PromptContext) -> PromptParts:
        return PromptParts(
            stable=self._stable(ctx), context=self._context(ctx), volatile=_volatile(ctx)
        )

    def _stable(self, ctx: PromptContext) -> str:
        parts = [self._identity_text()]
        parts += [self._guidance[name] for name in ctx.tool_names if name in self._guidance]
        parts.append(TASK_COMPLETION)
        hint = self._hints.get(ctx.platform)
        if hint:
            parts.append(hint)
        return "\n\n".join(parts)

    def _identity_text(self) -> str:
        soul = _read(self._home / "SOUL.md")
        if soul:
            threat = scan(soul)
            if threat is None:
                return soul
            return f"{DEFAULT_IDENTITY}\n\n[SOUL.md was not used: it matched {threat}]"
        return self._identity or DEFAULT_IDENTITY

    def _context(self, ctx: PromptContext) -> str:
        parts = [(ctx.caller.system_message or "").strip()]
        if ctx.caller.workspace is not None:
            found = project_context(ctx.caller.workspace, max_chars=self._context_max_chars)
            parts.append(found.text)
        return "\n\n".join(p for p in parts if p)


def _volatile(ctx: PromptContext) -> str:
    started = datetime.fromtimestamp(ctx.started_at, tz=UTC)
    metadata = (
        # The date only, so the bytes stay the same all day long.
        f"Conversation started: {started:%A, %B} {started.day}, {started.year}\n"
        f"Session: {ctx.session_id}\n"
        f"Model: {ctx.model} ({ctx.provider})"
    )
    return "\n\n".join([*ctx.memory_blocks, metadata])


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
