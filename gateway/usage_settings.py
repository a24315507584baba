"""The ``pricing:`` and ``budgets:`` sections (``core.usage``).

``pricing`` lists, per provider and model, what a million tokens cost: ``input``,
``output`` and optionally ``cache_read`` / ``cache_write`` (the input price when left
out). chatgate ships no prices; a model with none has no cost. ``budgets`` caps usage per
day and month, in tokens (input plus output) or cost: ``global``, ``per_platform`` (by
platform name), ``per_chat`` and ``per_person`` (each chat and person separately, with
``overrides`` by ``platform:chat_id`` or ``platform:user_id``), and ``background`` (the
review, the curator and cron); days and months are those of ``timezone``.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import ConfigDict, Field, field_validator

from adapters.platform import Section
from core.usage.budgets import BudgetRules, Limits
from core.usage.pricing import Price, Pricing


class ModelPrice(Section):
    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)

    def price(self) -> Price:
        return Price(self.input, self.output, self.cache_read, self.cache_write)


class PricingSettings(Section):
    # Per model name, as ``model.name`` (or the provider's model setting) names it.
    openai: dict[str, ModelPrice] = Field(default_factory=dict)
    anthropic: dict[str, ModelPrice] = Field(default_factory=dict)
    offline: dict[str, ModelPrice] = Field(default_factory=dict)

    def pricing(self) -> Pricing:
        prices = {"openai": self.openai, "anthropic": self.anthropic, "offline": self.offline}
        return Pricing(
            {p: {m: v.price() for m, v in models.items()} for p, models in prices.items()}
        )


class LimitSettings(Section):
    daily_tokens: int | None = Field(default=None, ge=0)
    monthly_tokens: int | None = Field(default=None, ge=0)
    daily_cost: float | None = Field(default=None, ge=0)
    monthly_cost: float | None = Field(default=None, ge=0)

    def limits(self) -> Limits:
        return Limits(self.daily_tokens, self.monthly_tokens, self.daily_cost, self.monthly_cost)


class ScopedLimitSettings(LimitSettings):
    # Keyed ``platform:chat_id`` (per chat) or ``platform:user_id`` (per person).
    overrides: dict[str, LimitSettings] = Field(default_factory=dict)

    def override_limits(self) -> dict[str, Limits]:
        return {key: value.limits() for key, value in self.overrides.items()}


class BudgetSettings(Section):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # ``global`` is a Python keyword: the field is ``global_``, the key ``global``.
    global_: LimitSettings = Field(default_factory=LimitSettings, alias="global")
    per_platform: dict[str, LimitSettings] = Field(default_factory=dict)
    per_chat: ScopedLimitSettings = Field(default_factory=ScopedLimitSettings)
    per_person: ScopedLimitSettings = Field(default_factory=ScopedLimitSettings)
    background: LimitSettings = Field(default_factory=LimitSettings)
    # An IANA zone (``Europe/Berlin``): where budget days and months start.
    timezone: str = "UTC"

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"{value!r} is no IANA time zone (e.g. UTC, Europe/Berlin)") from exc
        return value

    def rules(self) -> BudgetRules:
        return BudgetRules(
            global_=self.global_.limits(),
            per_platform={name: rules.limits() for name, rules in self.per_platform.items()},
            per_chat=self.per_chat.limits(),
            chat_overrides=self.per_chat.override_limits(),
            per_person=self.per_person.limits(),
            person_overrides=self.per_person.override_limits(),
            background=self.background.limits(),
            timezone=self.timezone,
        )
