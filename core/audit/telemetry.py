"""The audit ledger fed by what the core already tells its tracer (``core.telemetry``).

``AuditTelemetry`` wraps the gateway's ``Telemetry`` (OpenTelemetry or none): every call
goes on to it unchanged, and turns, model calls and tool calls are also recorded in the
ledger. A model call's cost comes from ``cost_of(provider, model, tokens)`` when one is
given (``Pricing.cost_of`` of the usage accounting), else it is left empty.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType

from core.audit.events import AuditSink, args_digest
from core.telemetry import AgentNotes, ModelCall, Telemetry, ToolRun
from core.usage.pricing import Tokens

log = logging.getLogger(__name__)

# The tool whose successful calls change the skills library (``core.skills``).
SKILL_TOOL = "skill_manage"

CostOf = Callable[[str, str, Tokens], float | None]


class _Notes:
    """Forwards the turn's usage to the tracer's notes and keeps it for the ledger."""

    def __init__(self, inner: AgentNotes) -> None:
        self._inner = inner
        self.tokens = (0, 0)

    def usage(self, input_tokens: int, output_tokens: int) -> None:
        self.tokens = (input_tokens, output_tokens)
        self._inner.usage(input_tokens, output_tokens)


class _Turn:
    """One turn in the ledger: ``turn_started`` on entry, ``turn_finished`` with its
    outcome and usage on exit, around the tracer's own span. A class rather than
    ``@contextmanager``: it runs every turn, on the event loop."""

    __slots__ = ("_audit", "_inner", "_notes", "_provider", "_model")

    def __init__(
        self,
        audit: AuditSink,
        inner: AbstractContextManager[AgentNotes],
        provider: str,
        model: str,
    ) -> None:
        self._audit = audit
        self._inner = inner
        self._provider = provider
        self._model = model

    def __enter__(self) -> AgentNotes:
        self._audit.record("turn_started", {"provider": self._provider, "model": self._model})
        self._notes = _Notes(self._inner.__enter__())
        return self._notes

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        if exc is None:
            outcome = "ok"
        elif isinstance(exc, asyncio.CancelledError):
            outcome = "cancelled"
        else:
            outcome = "error"
        tokens_in, tokens_out = self._notes.tokens
        self._audit.record(
            "turn_finished",
            {"outcome": outcome, "input_tokens": tokens_in, "output_tokens": tokens_out},
        )
        return self._inner.__exit__(exc_type, exc, tb)


class AuditTelemetry:
    """See the module docstring."""

    def __init__(self, inner: Telemetry, audit: AuditSink, cost_of: CostOf | None = None) -> None:
        self._inner = inner
        self._audit = audit
        self._cost_of = cost_of

    def agent(self, provider: str, model: str) -> AbstractContextManager[AgentNotes]:
        return _Turn(self._audit, self._inner.agent(provider, model), provider, model)

    def tool(self, name: str, call_id: str) -> AbstractContextManager[object]:
        return self._inner.tool(name, call_id)

    def tool_run(self, run: ToolRun) -> None:
        self._inner.tool_run(run)
        self._audit.record(
            "tool_call",
            {
                "tool": run.name,
                "call_id": run.call_id,
                "outcome": "error" if run.failed else "ok",
                "seconds": round(run.seconds, 6),
                "args_sha256": args_digest(run.arguments),
            },
        )
        if run.name == SKILL_TOOL and not run.failed:
            self._audit.record("skill_write", {"call_id": run.call_id})

    def model_call(self, call: ModelCall) -> None:
        self._inner.model_call(call)
        usage = {
            "input_tokens": call.input_tokens,
            "output_tokens": call.output_tokens,
            "cache_read_tokens": call.cache_read_tokens,
            "cache_write_tokens": call.cache_write_tokens,
        }
        self._audit.record(
            "model_call",
            {
                "provider": call.provider,
                "model": call.model,
                **usage,
                "cost": self._cost(call),
                "seconds": round(call.seconds, 6),
                "outcome": call.error or "ok",
            },
        )

    def _cost(self, call: ModelCall) -> float | None:
        if self._cost_of is None or call.error is not None:
            return None
        tokens = Tokens(
            call.input_tokens, call.output_tokens, call.cache_read_tokens, call.cache_write_tokens
        )
        try:
            return self._cost_of(call.provider, call.model, tokens)
        except Exception:  # a pricing bug must not fail the model call it prices
            log.exception("audit: no cost for a %s call", call.model)
            return None
