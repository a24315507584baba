"""Optional OpenTelemetry: traces and GenAI metrics to an OTLP collector.

Only when ``telemetry.otlp_endpoint`` (``OTEL_EXPORTER_OTLP_ENDPOINT``) is set, and only
with the ``otel`` extra installed (``pip install 'chatgate[otel]'``): the SDK is imported
here, lazily, so a gateway without either imports nothing of it and pays nothing. What
is sent is in ``gateway.otel_sdk``.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack

from core.telemetry import NO_TELEMETRY, Telemetry
from gateway.settings import TelemetrySettings

log = logging.getLogger(__name__)


def open_telemetry(settings: TelemetrySettings, stack: AsyncExitStack) -> Telemetry:
    """The telemetry ``settings`` ask for, flushed and stopped when ``stack`` closes."""
    if not settings.otlp_endpoint:
        return NO_TELEMETRY
    try:
        from gateway.otel_sdk import OtelTelemetry
    except ImportError:
        log.warning(
            "telemetry.otlp_endpoint is set but OpenTelemetry is not installed; "
            "no traces are sent (pip install 'chatgate[otel]')"
        )
        return NO_TELEMETRY
    telemetry = OtelTelemetry(settings.otlp_endpoint)
    # The exporters post synchronously: flush off the event loop (a collector may share it).
    stack.push_async_callback(asyncio.to_thread, telemetry.shutdown)
    log.info("telemetry: OpenTelemetry traces and metrics to %s", settings.otlp_endpoint)
    return telemetry
