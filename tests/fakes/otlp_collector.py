"""A fake OpenTelemetry collector on 127.0.0.1: OTLP/HTTP (protobuf) traces and metrics.

It decodes what the real OTLP exporters post with the real protobuf messages and keeps
the spans (name -> attributes) and the names of the metrics it was sent.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self

from fastapi import FastAPI, Request, Response
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.fakes.loopback import LoopbackServer

Attributes = dict[str, Any]


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


class FakeCollector:
    """``spans``: (name, attributes, parent span id) in arrival order; ``metrics``: names."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, Attributes, bytes, bytes]] = []
        self.metrics: dict[str, list[Attributes]] = {}
        app = FastAPI()
        app.add_api_route("/v1/traces", self._traces, methods=["POST"])
        app.add_api_route("/v1/metrics", self._metrics, methods=["POST"])
        self._server = LoopbackServer(app)

    @property
    def url(self) -> str:
        return self._server.url

    async def _traces(self, request: Request) -> Response:
        body = ExportTraceServiceRequest.FromString(await request.body())
        for resource in body.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    attrs = {a.key: _value(a.value) for a in span.attributes}
                    self.spans.append((span.name, attrs, span.span_id, span.parent_span_id))
        return Response(status_code=200, media_type="application/x-protobuf")

    async def _metrics(self, request: Request) -> Response:
        body = ExportMetricsServiceRequest.FromString(await request.body())
        for resource in body.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    points = metric.histogram.data_points
                    found = self.metrics.setdefault(metric.name, [])
                    found.extend({a.key: _value(a.value) for a in p.attributes} for p in points)
        return Response(status_code=200, media_type="application/x-protobuf")

    async def __aenter__(self) -> Self:
        await self._server.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._server.stop()
