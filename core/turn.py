"""One turn: a user message processed to completion by the tool-calling loop.

The turn builds the API view from the stored transcript, calls the model, runs the
tools it asks for and loops until the model answers in text or the iteration bound
is hit. It writes nothing itself: it returns the messages to store, so the caller
commits the whole turn in one transaction (or nothing, when the model fails).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from core.clock import Clock
from core.models.base import ChatMessage, ModelClient, ModelReply, ModelRequest, ToolCall
from core.store.records import NewMessage, StoredMessage
from core.telemetry import NO_TELEMETRY, Telemetry
from core.tools import ToolContext, ToolRegistry

log = logging.getLogger(__name__)


@dataclass(slots=True)
class TurnResult:
    """What a completed turn produced."""

    messages: list[NewMessage] = field(default_factory=list)
    reply: str = ""
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    api_view: list[ChatMessage] = field(default_factory=list)


def to_chat(stored: StoredMessage) -> ChatMessage:
    """A transcript row as the model saw it (``api_content`` wins for exact replay)."""
    calls = tuple(
        ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"])
        for c in stored.tool_calls or ()
    )
    content = stored.api_content if stored.api_content is not None else stored.content
    role = stored.role if stored.role in ("user", "assistant", "tool") else "user"
    return ChatMessage(
        role=role,  # type: ignore[arg-type]  # narrowed by the check above
        content=content,
        tool_calls=calls,
        tool_call_id=stored.tool_call_id,
        name=stored.tool_name,
    )


class CallGate(Protocol):
    """What a tool call passes before it runs (``core.approvals``: a person's yes)."""

    async def clear(
        self, call: ToolCall, session_id: str, so_far: Sequence[NewMessage]
    ) -> str | None:
        """None when ``call`` may run now; else the tool result that stands in for it.
        ``so_far`` is the turn's work until now (what a paused turn resumes from)."""
        ...


def to_view(message: NewMessage) -> ChatMessage:
    """A message of the running turn as the model saw it."""
    if message.role == "user":
        return ChatMessage(role="user", content=message.api_content or message.content)
    if message.role == "tool":
        return ChatMessage(
            role="tool",
            content=message.content,
            tool_call_id=message.tool_call_id,
            name=message.tool_name,
        )
    calls = tuple(
        ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"])
        for c in message.tool_calls or ()
    )
    return ChatMessage(role="assistant", content=message.content, tool_calls=calls)


def unanswered_calls(messages: Sequence[NewMessage]) -> list[ToolCall]:
    """The calls of the turn's last assistant message that have no result yet."""
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=None)
    if last is None:
        return []
    answered = {m.tool_call_id for m in messages[last + 1 :] if m.role == "tool"}
    return [
        ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"])
        for c in messages[last].tool_calls or ()
        if c["id"] not in answered
    ]


class TurnRunner:
    """Runs turns against one model with one tool registry."""

    def __init__(
        self,
        model: ModelClient,
        tools: ToolRegistry,
        clock: Clock,
        *,
        max_iterations: int,
        telemetry: Telemetry = NO_TELEMETRY,
    ) -> None:
        self.model = model
        self.tools = tools
        self._clock = clock
        self._max_iterations = max_iterations
        self._telemetry = telemetry

    async def run(
        self,
        *,
        system: str,
        history: Sequence[ChatMessage],
        user: NewMessage,
        ctx: ToolContext,
        gate: CallGate | None = None,
    ) -> TurnResult:
        """Run the loop; raise ``ModelError`` if the model cannot be reached."""
        return await self.resume(system=system, history=history, so_far=[user], ctx=ctx, gate=gate)

    async def resume(
        self,
        *,
        system: str,
        history: Sequence[ChatMessage],
        so_far: Sequence[NewMessage],
        ctx: ToolContext,
        gate: CallGate | None = None,
    ) -> TurnResult:
        """Go on with a turn whose work so far is ``so_far`` (the user message first):
        its unanswered calls first, then the loop, never asking the model again for what
        ``so_far`` holds."""
        result = TurnResult(
            messages=list(so_far), api_view=[*history, *(to_view(m) for m in so_far)]
        )
        for message in so_far:
            _count(result, message)
        used = sum(m.role == "assistant" for m in so_far)
        with self._telemetry.agent(self.model.provider, self.model.model) as notes:
            try:
                await self._run_calls(result, unanswered_calls(so_far), ctx, gate)
                return await self._loop(system, result, ctx, gate, used)
            finally:
                notes.usage(result.input_tokens, result.output_tokens)

    async def _loop(
        self, system: str, result: TurnResult, ctx: ToolContext, gate: CallGate | None, used: int
    ) -> TurnResult:
        specs = self.tools.specs()
        for _ in range(used, self._max_iterations):
            reply = await self.model.complete(
                ModelRequest(system=system, messages=result.api_view, tools=specs)
            )
            self._record_reply(result, reply)
            if not reply.tool_calls:
                result.reply = reply.content or ""
                return result
            await self._run_calls(result, reply.tool_calls, ctx, gate)
        result.reply = self._bound_reached(result)
        return result

    async def _run_calls(
        self,
        result: TurnResult,
        calls: Sequence[ToolCall],
        ctx: ToolContext,
        gate: CallGate | None,
    ) -> None:
        for call in calls:
            stand_in = await gate.clear(call, ctx.session_id, result.messages) if gate else None
            if stand_in is None:
                await self._run_tool(result, call, ctx)
            else:
                self._add_result(result, call, stand_in)

    def _record_reply(self, result: TurnResult, reply: ModelReply) -> None:
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
        message = NewMessage(
            role="assistant",
            content=reply.content,
            created_at=self._clock.now(),
            tool_calls=calls or None,
            finish_reason=reply.finish_reason,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            cache_read_tokens=reply.cache_read_tokens,
            cache_write_tokens=reply.cache_write_tokens,
        )
        _count(result, message)
        result.messages.append(message)
        result.api_view.append(
            ChatMessage(role="assistant", content=reply.content, tool_calls=reply.tool_calls)
        )

    async def _run_tool(self, result: TurnResult, call: ToolCall, ctx: ToolContext) -> None:
        started = time.perf_counter()
        with self._telemetry.tool(call.name, call.id):
            output = await self.tools.run(call, ctx)
        log.debug("tool call: name=%s seconds=%.3f", call.name, time.perf_counter() - started)
        self._add_result(result, call, output)

    def _add_result(self, result: TurnResult, call: ToolCall, output: str) -> None:
        result.messages.append(
            NewMessage(
                role="tool",
                content=output,
                created_at=self._clock.now(),
                tool_call_id=call.id,
                tool_name=call.name,
            )
        )
        result.api_view.append(
            ChatMessage(role="tool", content=output, tool_call_id=call.id, name=call.name)
        )

    def _bound_reached(self, result: TurnResult) -> str:
        text = (
            f"I stopped after {self._max_iterations} tool steps without finishing. "
            "Tell me to continue, or narrow the request."
        )
        result.messages.append(
            NewMessage(role="assistant", content=text, created_at=self._clock.now())
        )
        result.api_view.append(ChatMessage(role="assistant", content=text))
        return text


def _count(result: TurnResult, message: NewMessage) -> None:
    """Add an assistant message's usage and calls to the turn's totals."""
    if message.role != "assistant":
        return
    result.input_tokens += message.input_tokens or 0
    result.output_tokens += message.output_tokens or 0
    result.cache_read_tokens += message.cache_read_tokens or 0
    result.cache_write_tokens += message.cache_write_tokens or 0
    result.tool_calls += len(message.tool_calls or ())
