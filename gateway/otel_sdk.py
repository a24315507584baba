"""``OtelTelemetry``: the core's ``Telemetry`` over the OpenTelemetry SDK, following the
GenAI semantic conventions.

- a span ``invoke_agent chatgate`` around each turn (``gen_ai.operation.name``,
  ``gen_ai.agent.name``, ``gen_ai.provider.name``, ``gen_ai.request.model``, the usage
  ``gen_ai.usage.input_tokens`` / ``output_tokens``, and ``chatgate.turn_id``, the id the
  log lines carry);
- a child span ``execute_tool <name>`` around each tool call (``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``);
- histograms ``gen_ai.client.operation.duration`` (seconds, with ``error.type`` when a
  call failed) and ``gen_ai.client.token.usage`` (``gen_ai.token.type`` input | output).

No message text, prompt or tool argument is ever an attribute. Imported only by
``gateway.otel`` when telemetry is on; the providers belong to this gateway alone (none is
set globally), so apps in one process never mix their spans.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind

from core.telemetry import AgentNotes, ModelCall, ToolRun
from core.turn_context import current

AGENT = "chatgate"


class _Notes:
    def __init__(self, span: Span) -> None:
        self._span = span

    def usage(self, input_tokens: int, output_tokens: int) -> None:
        self._span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
        self._span.set_attribute("gen_ai.usage.output_tokens", output_tokens)


class OtelTelemetry:
    """See the module docstring; ``shutdown`` flushes what is left."""

    def __init__(self, endpoint: str) -> None:
        base = endpoint.rstrip("/")
        resource = Resource.create({"service.name": AGENT})
        self._traces = TracerProvider(resource=resource)
        self._traces.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces"))
        )
        reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=f"{base}/v1/metrics"))
        self._meters = MeterProvider(resource=resource, metric_readers=[reader])
        self._tracer = self._traces.get_tracer(AGENT)
        meter = self._meters.get_meter(AGENT)
        self._duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration"
        )
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens used per call"
        )

    @contextmanager
    def agent(self, provider: str, model: str) -> Iterator[AgentNotes]:
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT,
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
            "chatgate.turn_id": current() or "",
        }
        name = f"invoke_agent {AGENT}"
        with self._tracer.start_as_current_span(name, attributes=attributes) as span:
            yield _Notes(span)

    @contextmanager
    def tool(self, name: str, call_id: str) -> Iterator[object]:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
        }
        span_name = f"execute_tool {name}"
        with self._tracer.start_as_current_span(
            span_name, kind=SpanKind.INTERNAL, attributes=attributes
        ) as span:
            yield span

    def model_call(self, call: ModelCall) -> None:
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": call.provider,
            "gen_ai.request.model": call.model,
        }
        if call.error is not None:
            self._duration.record(call.seconds, {**attributes, "error.type": call.error})
            return
        self._duration.record(call.seconds, attributes)
        self._tokens.record(call.input_tokens, {**attributes, "gen_ai.token.type": "input"})
        self._tokens.record(call.output_tokens, {**attributes, "gen_ai.token.type": "output"})

    def tool_run(self, run: ToolRun) -> None:
        return None  # the execute_tool span already carries it

    def shutdown(self) -> None:
        self._traces.shutdown()
        self._meters.shutdown()
