"""``GET /metrics``: Prometheus text built from the core's counters at scrape time, and
the families each feature contributes (``Contribution.metrics``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric as Family
from prometheus_client.registry import Collector

from gateway.features.base import Metric
from gateway.runtime import Gateway


class _GatewayCollector(Collector):
    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    def collect(self) -> Iterator[Family]:
        core = self._gateway.core
        stats = core.stats
        yield _counter("chatgate_inbound_messages", "Messages accepted", "platform", stats.inbound)
        yield _counter(
            "chatgate_duplicate_messages", "Redeliveries ignored", "platform", stats.duplicates
        )
        yield _counter("chatgate_turns", "Turns finished", "status", stats.turns)
        yield _counter("chatgate_commands", "Chat commands run", "command", stats.commands)
        turn_time = CounterMetricFamily(
            "chatgate_turn_seconds", "Time spent in turns (sum)", labels=[]
        )
        turn_time.add_metric([], stats.turn_seconds_sum)
        yield turn_time
        yield _gauge("chatgate_active_lanes", "Sessions with a live worker", core.active_lanes)
        yield _gauge("chatgate_queued_messages", "Messages waiting for a turn", core.queued)
        yield _gauge(
            "chatgate_db_commits", "SessionDB write transactions", self._gateway.db.commits
        )
        writable = self._gateway.db.health.problem is None
        yield _gauge("chatgate_store_writable", "1 while the SessionDB can write", writable)
        for metric in self._gateway.metrics():
            yield _family(metric)


def _family(metric: Metric) -> Family:
    if isinstance(metric.values, Mapping):
        if metric.kind == "counter":
            return _counter(metric.name, metric.doc, metric.label, metric.values)
        family = GaugeMetricFamily(metric.name, metric.doc, labels=[metric.label])
        for key, value in sorted(metric.values.items()):
            family.add_metric([key], value)
        return family
    if metric.kind == "counter":
        counter = CounterMetricFamily(metric.name, metric.doc, labels=[])
        counter.add_metric([], metric.values)
        return counter
    return _gauge(metric.name, metric.doc, metric.values)


def _counter(name: str, doc: str, label: str, values: Mapping[str, float]) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=[label])
    for key, value in sorted(values.items()):
        family.add_metric([key], value)
    return family


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def render(gateway: Gateway) -> bytes:
    registry = CollectorRegistry()
    registry.register(_GatewayCollector(gateway))
    return generate_latest(registry)
