"""``GET /metrics``: Prometheus text built at scrape time from the core's numbers
(``core.stats.CoreStats``), the gateway's state, the process, and the families each
feature contributes (``Contribution.metrics``).

Every scrape renders into a registry of its own, so apps in one process (the tests
start many) never share a series. No family has a per-chat or per-person label. The
README's "Metrics" section lists each family; ``deploy/grafana-dashboard.json`` charts them.
"""

from __future__ import annotations

import logging
import platform
from collections.abc import Iterator, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.metrics_core import Metric as Family
from prometheus_client.registry import Collector

from core.errors import StoreError
from core.stats import CoreStats, Histograms
from gateway.features.base import Metric
from gateway.runtime import Gateway

log = logging.getLogger(__name__)

# Label value (one label) or tuple of label values -> number.
Labelled = Mapping[Any, float]


class _GatewayCollector(Collector):
    def __init__(self, gateway: Gateway, outbox_pending: int | None) -> None:
        self._gateway = gateway
        self._outbox_pending = outbox_pending

    def collect(self) -> Iterator[Family]:
        gateway = self._gateway
        yield _build_info()
        yield from _counters(gateway.core.stats)
        commits = CounterMetricFamily("chatgate_db_commits", "SessionDB write transactions")
        commits.add_metric([], gateway.db.commits)
        yield commits
        yield from _histograms(gateway.core.stats)
        yield from self._gauges()
        for metric in gateway.metrics():
            yield _family(metric)

    def _gauges(self) -> Iterator[Family]:
        gateway = self._gateway
        core = gateway.core
        yield _gauge("chatgate_inbox_backlog", "Accepted messages waiting for a turn", core.queued)
        yield _gauge(
            "chatgate_active_sessions", "Sessions with a live lane worker", core.active_lanes
        )
        yield _gauge(
            "chatgate_cached_sessions",
            "Sessions whose transcript is in memory",
            core.sessions.cached_count,
        )
        yield _gauge(
            "chatgate_session_cache_bytes",
            "Estimated bytes of the transcripts in memory",
            core.sessions.cached_bytes,
        )
        if self._outbox_pending is not None:
            yield _gauge(
                "chatgate_outbox_pending", "Replies not delivered yet", self._outbox_pending
            )
        writable = gateway.db.health.problem is None
        yield _gauge("chatgate_store_writable", "1 while the SessionDB can write", writable)
        connected = GaugeMetricFamily(
            "chatgate_adapter_connected", "1 while its adapter is healthy", labels=["platform"]
        )
        for name, adapter in sorted(gateway.adapters.items()):
            connected.add_metric([name], 1.0 if adapter.healthy else 0.0)
        yield connected


def _counters(stats: CoreStats) -> Iterator[Family]:
    platform_ = ("platform",)
    yield _counter("chatgate_inbound_messages", "Messages accepted", platform_, stats.inbound)
    yield _counter(
        "chatgate_duplicate_messages", "Redeliveries ignored", platform_, stats.duplicates
    )
    yield _counter(
        "chatgate_turned_away_messages",
        "Messages the access policy kept out",
        platform_,
        stats.turned_away,
    )
    yield _counter("chatgate_turns", "Turns finished", ("platform", "outcome"), stats.turns)
    yield _counter("chatgate_commands", "Chat commands run", ("command",), stats.commands)
    yield _counter(
        "chatgate_model_errors", "Model calls that failed", ("provider", "kind"), stats.model_errors
    )
    yield _counter(
        "chatgate_deliveries", "Reply delivery attempts", ("platform", "outcome"), stats.deliveries
    )
    usage = ("provider", "model", "kind")
    yield _counter(
        "chatgate_model_tokens", "Tokens model calls used", (*usage, "type"), stats.usage_tokens
    )
    yield _counter("chatgate_model_cost", "Cost of model calls (pricing:)", usage, stats.usage_cost)


def _histograms(stats: CoreStats) -> Iterator[Family]:
    yield _histogram(
        "chatgate_turn_duration_seconds",
        "Model turns, start to commit",
        ("platform",),
        stats.turn_seconds,
    )
    yield _histogram(
        "chatgate_model_call_duration_seconds",
        "One model call, retries included",
        ("provider", "model"),
        stats.model_seconds,
    )
    yield _histogram(
        "chatgate_delivery_duration_seconds",
        "One reply handed to its platform",
        ("platform",),
        stats.delivery_seconds,
    )
    yield _histogram(
        "chatgate_inbox_wait_seconds",
        "From queued on its chat's lane to its turn's start",
        ("platform",),
        stats.inbox_wait_seconds,
    )


def _histogram(
    name: str, doc: str, labels: tuple[str, ...], histograms: Histograms
) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=list(labels))
    for key, series in sorted(histograms.series.items()):
        family.add_metric(list(key), series.cumulative(), sum_value=series.sum)
    return family


def _counter(name: str, doc: str, labels: tuple[str, ...], values: Labelled) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=list(labels))
    for key, value in sorted(values.items()):
        family.add_metric([key] if isinstance(key, str) else list(key), value)
    return family


def _build_info() -> GaugeMetricFamily:
    try:
        release = version("chatgate")
    except PackageNotFoundError:  # run from a checkout that was never installed
        release = "unknown"
    family = GaugeMetricFamily(
        "chatgate_build_info", "Always 1; the labels say what runs", labels=["version", "python"]
    )
    family.add_metric([release, platform.python_version()], 1.0)
    return family


def _family(metric: Metric) -> Family:
    """A feature's family (``Contribution.metrics``)."""
    labels = (metric.label,) if isinstance(metric.values, Mapping) else ()
    values: Labelled = metric.values if isinstance(metric.values, Mapping) else {(): metric.values}
    if metric.kind == "counter":
        return _counter(metric.name, metric.doc, labels, values)
    family = GaugeMetricFamily(metric.name, metric.doc, labels=list(labels))
    for key, value in sorted(values.items()):
        family.add_metric([key] if isinstance(key, str) else list(key), value)
    return family


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=float(value))


async def scrape(gateway: Gateway) -> bytes:
    """The exposition text for one scrape (the outbox backlog is read from the store;
    left out, not an error, while the store cannot answer)."""
    try:
        pending: int | None = await gateway.db.pending_reply_count()
    except StoreError as exc:
        log.warning("metrics: outbox backlog unknown: %s", exc.__class__.__name__)
        pending = None
    registry = CollectorRegistry()
    registry.register(_GatewayCollector(gateway, pending))
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    return generate_latest(registry)
