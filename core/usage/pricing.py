"""What a model call costs, from the operator's price list (``pricing:`` in config).

Prices are per million tokens, per provider and model; chatgate ships none, since they
change and differ by contract. A model with no price has no cost (None), never zero.
The provider's ``input_tokens`` is the whole prompt, cache reads and writes included, so
only its uncached rest is charged at the input price.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from core.record import record

MILLION = 1_000_000


@record
class Tokens:
    """One call's token counts as the provider reported them."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        """What budgets count: input plus output."""
        return self.input + self.output


@record
class Price:
    """Per million tokens; a cache price left out is the input price."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def of(self, tokens: Tokens) -> float:
        cache_read = self.input if self.cache_read is None else self.cache_read
        cache_write = self.input if self.cache_write is None else self.cache_write
        uncached = max(0, tokens.input - tokens.cache_read - tokens.cache_write)
        total = (
            uncached * self.input
            + tokens.output * self.output
            + tokens.cache_read * cache_read
            + tokens.cache_write * cache_write
        )
        return total / MILLION


@record
class Pricing:
    """The price list: provider -> model -> ``Price``."""

    prices: Mapping[str, Mapping[str, Price]] = field(default_factory=dict)

    def cost_of(self, provider: str, model: str, usage: Tokens) -> float | None:
        """The call's cost in the price list's currency, or None when it has no price."""
        price = self.prices.get(provider, {}).get(model)
        return None if price is None else price.of(usage)
