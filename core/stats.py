"""What the core counts and times for ``/metrics``: plain numbers, no metrics library.

The core has no Prometheus import (its layer allows none); the gateway turns these into
Prometheus families at scrape time (``gateway/metrics.py``). Recording is a dictionary
increment and, for a time, one ``bisect`` into fixed buckets: cheap on the hot path.
Labels are platforms, outcomes, providers and models, never a chat or a person.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from dataclasses import dataclass, field

# Upper bounds in seconds (Prometheus ``le``), from a fast local reply to a slow tool loop.
TURN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
CALL_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
SEND_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
WAIT_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 60.0, 300.0)


class Histogram:
    """Observations counted into fixed buckets (each count is for its bucket alone;
    ``cumulative`` gives Prometheus' running totals)."""

    __slots__ = ("bounds", "counts", "sum", "count")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one is +Inf
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, count at or below it)`` for each bound and ``+Inf``."""
        total, out = 0, []
        for bound, count in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            total += count
            out.append((bound, total))
        return out


class Histograms:
    """One histogram per label tuple, all with the same buckets."""

    __slots__ = ("bounds", "series")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.series: dict[tuple[str, ...], Histogram] = {}

    def observe(self, labels: tuple[str, ...], value: float) -> None:
        histogram = self.series.get(labels)
        if histogram is None:
            histogram = self.series[labels] = Histogram(self.bounds)
        histogram.observe(max(0.0, value))


@dataclass(slots=True)
class CoreStats:
    inbound: Counter[str] = field(default_factory=Counter)
    duplicates: Counter[str] = field(default_factory=Counter)
    turned_away: Counter[str] = field(default_factory=Counter)
    # (platform, outcome: done | failed | cancelled)
    turns: Counter[tuple[str, str]] = field(default_factory=Counter)
    commands: Counter[str] = field(default_factory=Counter)
    # (provider, kind: timeout | rate_limited | unavailable | refused)
    model_errors: Counter[tuple[str, str]] = field(default_factory=Counter)
    # (provider, model, kind: turn | review | curator | cron | compaction, type: input |
    # output | cache_read | cache_write); cost by (provider, model, kind) (``core.usage``)
    usage_tokens: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    usage_cost: defaultdict[tuple[str, str, str], float] = field(
        default_factory=lambda: defaultdict(float)
    )
    # (platform, outcome: sent | retry | undeliverable | pulled)
    deliveries: Counter[tuple[str, str]] = field(default_factory=Counter)
    turn_seconds: Histograms = field(default_factory=lambda: Histograms(TURN_BUCKETS))
    model_seconds: Histograms = field(default_factory=lambda: Histograms(CALL_BUCKETS))
    delivery_seconds: Histograms = field(default_factory=lambda: Histograms(SEND_BUCKETS))
    inbox_wait_seconds: Histograms = field(default_factory=lambda: Histograms(WAIT_BUCKETS))

    def observe_turn(self, platform: str, outcome: str, seconds: float) -> None:
        self.turns[platform, outcome] += 1
        self.turn_seconds.observe((platform,), seconds)
