"""One turn: a user message processed to completion by the tool-calling loop.

The turn builds the API view from the stored transcript, calls the model with the
session's frozen tool list (``core.session_tools``), runs the tools it asks for and
loops until the model answers in text or a bound stops it (``core.turn_limits``).
Every tool result passes the threat scan first (``core.tool_output``). It writes
nothing itself: it returns the messages to store, so the caller commits the whole turn
in one transaction (or nothing, when the model fails).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from core import turn_limits
from core.clock import Clock
from core.media.refs import MediaRef
from core.models.base import ChatMessage, ModelClient, ModelReply, ModelRequest, ToolCall
from core.models.wire import WireCache
from core.session_tools import ToolOffer
from core.store.records import NewMessage, StoredMessage
from core.streaming import NO_PREVIEW, TurnPreview
from core.telemetry import NO_TELEMETRY, Telemetry, ToolRun
from core.tool_output import guarded
from core.tools import ToolContext, ToolRegistry, failed, tool_error
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
        images=_images(stored.media) if role == "user" else (),
    )


def _images(media: Sequence[MediaRef]) -> tuple[MediaRef, ...]:
    return tuple(ref for ref in media if ref.kind == "image")


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
        return ChatMessage(
            role="user",
            content=message.api_content or message.content,
            images=_images(message.media),
        )
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
        gate: CallGate | None = None,
        preview: TurnPreview = NO_PREVIEW,
        wire: WireCache | None = None,
    ) -> TurnResult:
        """Run the loop; raise ``ModelError`` if the model cannot be reached.

        ``offer`` is the session's frozen tool list (default: every registered tool).
        An empty ``result`` given by the caller is filled as the turn goes, so that a
        caller that cuts the turn short can still ``stop`` and store what it did.
        """
        return await self.resume(
            system=system,
            history=history,
            so_far=[user],
            ctx=ctx,
            offer=offer,
            result=result,
            gate=gate,
            preview=preview,
            wire=wire,
        )

    async def resume(
        self,
        *,
        system: str,
        history: Sequence[ChatMessage],
        so_far: Sequence[NewMessage],
        ctx: ToolContext,
        offer: ToolOffer | None = None,
        result: TurnResult | None = None,
        gate: CallGate | None = None,
        preview: TurnPreview = NO_PREVIEW,
        wire: WireCache | None = None,
    ) -> TurnResult:
        """Go on with a turn whose work so far is ``so_far`` (the user message first):
        its unanswered calls first, then the loop, never asking the model again for what
        ``so_far`` holds. ``offer``, ``result`` and ``gate`` are as for ``run``; the
        model's text streams into ``preview`` and each tool call shows there
        (``core.streaming``). ``wire`` is the session's encoded messages
        (``core.models.wire``), so the prefix is not encoded again."""
        result = result if result is not None else TurnResult()
        result.messages.extend(so_far)
        result.api_view.extend([*history, *(to_view(m) for m in so_far)])
        for message in so_far:
            _count(result, message)
        used = sum(m.role == "assistant" for m in so_far)
        with self._telemetry.agent(self.model.provider, self.model.model) as notes:
            try:
                calls = unanswered_calls(so_far)
                if not await self._run_calls(result, calls, ctx, offer, gate, preview):
                    return self.stop(result, turn_limits.tool_calls(self._max_tool_calls))
                return await self._loop(system, result, ctx, offer, gate, used, preview, wire)
            finally:
                notes.usage(result.input_tokens, result.output_tokens)

    async def _loop(
        self,
        system: str,
        result: TurnResult,
        ctx: ToolContext,
        offer: ToolOffer | None,
        gate: CallGate | None,
        used: int,
        preview: TurnPreview,
        wire: WireCache | None = None,
    ) -> TurnResult:
        specs = list(offer.specs) if offer is not None else self.tools.specs()
        for _ in range(used, self._max_iterations):
            reply = await self.model.complete(
                ModelRequest(
                    system=system,
                    messages=result.api_view,
                    tools=specs,
                    on_text=preview.on_text,
                    wire=wire,
                )
            )
            self._record_reply(result, reply)
            if not reply.tool_calls:
                result.reply = reply.content or ""
                return result
            if not await self._run_calls(result, reply.tool_calls, ctx, offer, gate, preview):
                return self.stop(result, turn_limits.tool_calls(self._max_tool_calls))
        return self.stop(result, turn_limits.iterations(self._max_iterations))

    async def _run_calls(
        self,
        result: TurnResult,
        calls: Sequence[ToolCall],
        ctx: ToolContext,
        offer: ToolOffer | None,
        gate: CallGate | None,
        preview: TurnPreview = NO_PREVIEW,
    ) -> bool:
        """Run ``calls`` in order: a call not offered is refused, one the gate holds gets
        the gate's stand-in. False when the turn's tool-call budget kept some from running
        (every call given a result so far counts against it)."""
        for call in calls:
            if sum(m.role == "tool" for m in result.messages) >= self._max_tool_calls:
                return False
            refused = offer.refusal(call.name, self.tools.names()) if offer is not None else None
            if refused is not None:
                self._add_result(result, call, tool_error(refused))
                continue
            stand_in = await gate.clear(call, ctx.session_id, result.messages) if gate else None
            if stand_in is None:
                await preview.tool(call.name)
                await self._run_tool(result, call, ctx)
            else:
                self._add_result(result, call, stand_in)
        return True

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
        attached: list[MediaRef] = []
        with self._telemetry.tool(call.name, call.id):
            output = await self.tools.run(call, dataclasses.replace(ctx, attach=attached.append))
            output = guarded(call.name, output)
        seconds = time.perf_counter() - started
        log.debug("tool call: name=%s seconds=%.3f", call.name, seconds)
        run = ToolRun(call.name, call.id, call.arguments, seconds, failed(output))
        self._telemetry.tool_run(run)
        self._add_result(result, call, output, tuple(attached))

    def _add_result(
        self, result: TurnResult, call: ToolCall, output: str, media: tuple[MediaRef, ...] = ()
    ) -> None:
        result.messages.append(
            NewMessage(
                role="tool",
                content=output,
                created_at=self._clock.now(),
                tool_call_id=call.id,
                tool_name=call.name,
                media=media,
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


def sent_files(messages: Sequence[NewMessage]) -> list[MediaRef]:
    """The files the turn's tool results attached for the chat, in order."""
    return [
        ref
        for message in messages
        if message.role == "tool"
        for ref in message.media
        if ref.kind != "image"
    ]


def _count(result: TurnResult, message: NewMessage) -> None:
    """Add an assistant message's usage and calls to the turn's totals."""
    if message.role != "assistant":
        return
    result.input_tokens += message.input_tokens or 0
    result.output_tokens += message.output_tokens or 0
    result.cache_read_tokens += message.cache_read_tokens or 0
    result.cache_write_tokens += message.cache_write_tokens or 0
    result.tool_calls += len(message.tool_calls or ())
