"""What the core tells an optional tracer: the agent's turns, its tools, its model calls.

The core imports no telemetry library; ``Telemetry`` is the narrow surface it reports
through, and ``NO_TELEMETRY`` does nothing (the default: nothing changes and nothing is
paid without it). ``gateway/otel.py`` implements it with OpenTelemetry's GenAI semantic
conventions when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set. Attributes carry names, ids,
models and token counts, never a message's text.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Protocol

from core.record import record


@record
class ModelCall:
    """One finished model call, for the GenAI client metrics."""

    provider: str
    model: str
    seconds: float
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None  # the ``kind`` of ``core.models.observed.error_kind``
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@record
class ToolRun:
    """One finished tool call, for the audit ledger: ``arguments`` is the model's JSON
    text, which an implementation may digest but must never keep."""

    name: str
    call_id: str
    arguments: str
    seconds: float
    failed: bool


class AgentNotes(Protocol):
    """What a turn adds to its ``invoke_agent`` span before it ends."""

    def usage(self, input_tokens: int, output_tokens: int) -> None: ...


class Telemetry(Protocol):
    def agent(self, provider: str, model: str) -> AbstractContextManager[AgentNotes]:
        """Around one turn of the agent (``invoke_agent``)."""
        ...

    def tool(self, name: str, call_id: str) -> AbstractContextManager[object]:
        """Around one tool call (``execute_tool``)."""
        ...

    def model_call(self, call: ModelCall) -> None:
        """Record one model call's duration and token usage."""
        ...

    def tool_run(self, run: ToolRun) -> None:
        """Record one tool call once it has its result."""
        ...


class _NoNotes:
    def usage(self, input_tokens: int, output_tokens: int) -> None:
        return None


_NO_NOTES = _NoNotes()


class _NoTelemetry:
    def agent(self, provider: str, model: str) -> AbstractContextManager[AgentNotes]:
        return nullcontext(_NO_NOTES)

    def tool(self, name: str, call_id: str) -> AbstractContextManager[object]:
        return nullcontext()

    def model_call(self, call: ModelCall) -> None:
        return None

    def tool_run(self, run: ToolRun) -> None:
        return None


NO_TELEMETRY: Telemetry = _NoTelemetry()
