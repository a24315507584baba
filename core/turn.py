"""One turn: a user message processed to completion by the tool-calling loop.

The turn builds the API view from the stored transcript, calls the model with the
session's frozen tool list (``core.session_tools``), runs the tools it asks for and
loops until the model answers in text or a bound stops it (``core.turn_limits``).
Every tool result passes the threat scan first (``core.tool_output``). It writes
nothing itself: it returns the messages to store, so the caller commits the whole turn
in one transaction (or nothing, when the model fails).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from core import turn_limits
from core.clock import Clock
from core.models.base import ChatMessage, ModelClient, ModelReply, ModelRequest, ToolCall
from core.session_tools import ToolOffer
from core.store.records import NewMessage, StoredMessage
from core.telemetry import NO_TELEMETRY, Telemetry
from core.tool_output import guarded
from core.tools import ToolContext, ToolRegistry, tool_error
from core.turn_limits import TurnBound

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


class TurnRunner:
    """Runs turns against one model with one tool registry."""

    def __init__(
        self,
        model: ModelClient,
        tools: ToolRegistry,
        clock: Clock,
        *,
        max_iterations: int,
        max_tool_calls: int = 50,
        telemetry: Telemetry = NO_TELEMETRY,
    ) -> None:
        self.model = model
        self.tools = tools
        self._clock = clock
        self._max_iterations = max_iterations
        self._max_tool_calls = max_tool_calls
        self._telemetry = telemetry

    async def run(
        self,
        *,
        system: str,
        history: Sequence[ChatMessage],
        user: NewMessage,
        ctx: ToolContext,
        offer: ToolOffer | None = None,
        result: TurnResult | None = None,
    ) -> TurnResult:
        """Run the loop; raise ``ModelError`` if the model cannot be reached.

        ``offer`` is the session's frozen tool list (default: every registered tool).
        An empty ``result`` given by the caller is filled as the turn goes, so that a
        caller that cuts the turn short can still ``stop`` and store what it did.
        """
        user_view = ChatMessage(role="user", content=user.api_content or user.content)
        result = result if result is not None else TurnResult()
        result.messages.append(user)
        result.api_view.extend([*history, user_view])
        with self._telemetry.agent(self.model.provider, self.model.model) as notes:
            try:
                return await self._loop(system, result, ctx, offer)
            finally:
                notes.usage(result.input_tokens, result.output_tokens)

    async def _loop(
        self, system: str, result: TurnResult, ctx: ToolContext, offer: ToolOffer | None
    ) -> TurnResult:
        specs = list(offer.specs) if offer is not None else self.tools.specs()
        ran = 0
        for _ in range(self._max_iterations):
            reply = await self.model.complete(
                ModelRequest(system=system, messages=result.api_view, tools=specs)
            )
            self._record_reply(result, reply)
            if not reply.tool_calls:
                result.reply = reply.content or ""
                return result
            for call in reply.tool_calls[: max(self._max_tool_calls - ran, 0)]:
                ran += 1
                await self._run_tool(result, call, ctx, offer)
            if _dangling(result.api_view):  # the tool-call budget kept some from running
                return self.stop(result, turn_limits.tool_calls(self._max_tool_calls))
        return self.stop(result, turn_limits.iterations(self._max_iterations))

    def _record_reply(self, result: TurnResult, reply: ModelReply) -> None:
        result.input_tokens += reply.input_tokens
        result.output_tokens += reply.output_tokens
        result.cache_read_tokens += reply.cache_read_tokens
        result.cache_write_tokens += reply.cache_write_tokens
        result.tool_calls += len(reply.tool_calls)
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
        result.messages.append(
            NewMessage(
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
        )
        result.api_view.append(
            ChatMessage(role="assistant", content=reply.content, tool_calls=reply.tool_calls)
        )

    async def _run_tool(
        self, result: TurnResult, call: ToolCall, ctx: ToolContext, offer: ToolOffer | None
    ) -> None:
        started = time.perf_counter()
        refused = offer.refusal(call.name, self.tools.names()) if offer is not None else None
        if refused is not None:
            output = tool_error(refused)
        else:
            with self._telemetry.tool(call.name, call.id):
                output = guarded(call.name, await self.tools.run(call, ctx))
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

    def stop(self, result: TurnResult, bound: TurnBound) -> TurnResult:
        """End ``result``'s turn at ``bound``: each tool call without a result gets one
        saying it was not run, then the bound's line is the answer (``core.turn_limits``)."""
        answered = {m.tool_call_id for m in result.api_view if m.role == "tool"}
        last = next((m for m in reversed(result.api_view) if m.role == "assistant"), None)
        for call in last.tool_calls if last is not None else ():
            if call.id not in answered:
                self._add_result(result, call, tool_error(bound.not_run))
        result.messages.append(
            NewMessage(role="assistant", content=bound.line, created_at=self._clock.now())
        )
        result.api_view.append(ChatMessage(role="assistant", content=bound.line))
        result.reply = bound.line
        return result


def _dangling(view: Sequence[ChatMessage]) -> bool:
    """Whether the last assistant message has a tool call without a result."""
    answered = 0
    for message in reversed(view):
        if message.role == "assistant":
            return answered < len(message.tool_calls)
        answered += message.role == "tool"
    return False
