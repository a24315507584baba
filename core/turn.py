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
    ) -> TurnResult:
        """Run the loop; raise ``ModelError`` if the model cannot be reached."""
        user_view = ChatMessage(role="user", content=user.api_content or user.content)
        result = TurnResult(messages=[user], api_view=[*history, user_view])
        with self._telemetry.agent(self.model.provider, self.model.model) as notes:
            try:
                return await self._loop(system, result, ctx)
            finally:
                notes.usage(result.input_tokens, result.output_tokens)

    async def _loop(self, system: str, result: TurnResult, ctx: ToolContext) -> TurnResult:
        specs = self.tools.specs()
        for _ in range(self._max_iterations):
            reply = await self.model.complete(
                ModelRequest(system=system, messages=result.api_view, tools=specs)
            )
            self._record_reply(result, reply)
            if not reply.tool_calls:
                result.reply = reply.content or ""
                return result
            for call in reply.tool_calls:
                await self._run_tool(result, call, ctx)
        result.reply = self._bound_reached(result)
        return result

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

    async def _run_tool(self, result: TurnResult, call: ToolCall, ctx: ToolContext) -> None:
        started = time.perf_counter()
        with self._telemetry.tool(call.name, call.id):
            output = await self.tools.run(call, ctx)
        log.debug("tool call: name=%s seconds=%.3f", call.name, time.perf_counter() - started)
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
