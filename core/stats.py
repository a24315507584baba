"""Counters the core keeps for ``/metrics``; plain numbers, no metrics library in core."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(slots=True)
class CoreStats:
    inbound: Counter[str] = field(default_factory=Counter)
    duplicates: Counter[str] = field(default_factory=Counter)
    turned_away: Counter[str] = field(default_factory=Counter)
    turns: Counter[str] = field(default_factory=Counter)
    turn_seconds_sum: float = 0.0
    turn_seconds_count: int = 0
    commands: Counter[str] = field(default_factory=Counter)

    def observe_turn(self, status: str, seconds: float) -> None:
        self.turns[status] += 1
        self.turn_seconds_sum += seconds
        self.turn_seconds_count += 1
