"""Budgets: caps on tokens (input + output) and cost per day and month, with a hard stop.

Each scope sums its own usage rows: ``global`` every call; a platform, a chat and a
person only the calls of chat turns (and their compactions); ``background`` only the
review, the curator and cron, which are never charged to a chat. A piece of work may
start while the used amount is below every limit that applies to it; once one is
reached, ``Budgets`` names it and when it resets. Limits left out do not apply, and with
none set no usage is read at all.

What a scope used is kept as running sums (``RunningSums``): summed from the rows once,
then advanced by the rows added since the newest id seen, so a check costs the rows
written since the last one rather than the whole month's (``bench/budget_check.py``:
32 ms a check for the gateway's scope with 100,000 rows this month, 0.3 ms now). They
are summed again from the rows at each new day and every ``RESEED_SECONDS``: a
forgetting deletes a person's usage rows, and on PostgreSQL replicas may commit ids out
of order, so for at most that long a scope may count a forgotten call or miss another
replica's call committed late.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import field
from typing import Literal

from core.clock import Clock
from core.record import record
from core.store.usage import Scope, UsageStore, Used
from core.usage.attribution import BACKGROUND, Attribution
from core.usage.periods import Calendar, Period

LimitKey = Literal["daily_tokens", "monthly_tokens", "daily_cost", "monthly_cost"]
LIMIT_KEYS: tuple[LimitKey, ...] = ("daily_tokens", "monthly_tokens", "daily_cost", "monthly_cost")
CHAT_KINDS = ("turn", "compaction")
_WORDS = {
    "daily_tokens": "daily token",
    "monthly_tokens": "monthly token",
    "daily_cost": "daily cost",
    "monthly_cost": "monthly cost",
}


@record
class Limits:
    """One scope's limits; None: no limit of that kind."""

    daily_tokens: int | None = None
    monthly_tokens: int | None = None
    daily_cost: float | None = None
    monthly_cost: float | None = None

    @property
    def any(self) -> bool:
        return any(getattr(self, key) is not None for key in LIMIT_KEYS)

    def over(self, other: Limits) -> Limits:
        """These limits with ``other``'s set ones in their place (an override)."""
        changed = {k: getattr(other, k) for k in LIMIT_KEYS if getattr(other, k) is not None}
        return Limits(**{**{k: getattr(self, k) for k in LIMIT_KEYS}, **changed})


@record
class BudgetRules:
    """The ``budgets:`` section, as the core reads it."""

    global_: Limits = field(default_factory=Limits)
    per_platform: Mapping[str, Limits] = field(default_factory=dict)
    per_chat: Limits = field(default_factory=Limits)
    chat_overrides: Mapping[str, Limits] = field(default_factory=dict)
    per_person: Limits = field(default_factory=Limits)
    person_overrides: Mapping[str, Limits] = field(default_factory=dict)
    background: Limits = field(default_factory=Limits)
    timezone: str = "UTC"


@record
class Over:
    """A budget that is used up: ``budget`` names it for logs and the notice's key."""

    budget: str
    label: str
    period: Period

    def line(self, calendar: Calendar) -> str:
        """What the person hears instead of an answer."""
        return f"{self.label} is used up; it resets at {calendar.shown(self.period.end)}."


@record
class _Budget:
    budget: str
    label: str
    scope: Scope
    limits: Limits


RESEED_SECONDS = 60.0
SUMS_KEPT = 4096  # scopes whose running sums are kept, least recently checked out first


@record
class _Sums:
    seeded_at: float
    last_id: int
    used: Used


class RunningSums:
    """What each scope used this day and month, advanced by the rows added since the
    last look (module docstring)."""

    def __init__(
        self,
        store: UsageStore,
        clock: Clock,
        *,
        reseed_seconds: float = RESEED_SECONDS,
        kept: int = SUMS_KEPT,
    ) -> None:
        self._store = store
        self._clock = clock
        self._reseed_seconds = reseed_seconds
        self._kept = kept
        self._sums: OrderedDict[tuple[Scope, float, float], _Sums] = OrderedDict()

    async def used(self, scope: Scope, *, day_start: float, month_start: float) -> Used:
        key = (scope, day_start, month_start)
        now = self._clock.now()
        held = self._sums.get(key)
        found: _Sums | None = None
        if held is not None and 0 <= now - held.seeded_at < self._reseed_seconds:
            more, last_id = await self._store.used_after(
                scope, day_start=day_start, month_start=month_start, after_id=held.last_id
            )
            if last_id >= held.last_id:  # else the newest rows were deleted: sum again
                found = _Sums(held.seeded_at, last_id, held.used.plus(more))
        if found is None:
            used, last_id = await self._store.used_after(
                scope, day_start=day_start, month_start=month_start
            )
            found = _Sums(now, last_id, used)
        self._sums[key] = found
        self._sums.move_to_end(key)
        while len(self._sums) > self._kept:
            self._sums.popitem(last=False)
        return found.used


class Budgets:
    """See the module docstring."""

    def __init__(self, store: UsageStore, rules: BudgetRules, calendar: Calendar, clock: Clock):
        self._sums = RunningSums(store, clock)
        self._rules = rules
        self.calendar = calendar
        self._clock = clock
        # Nothing to check on the hot path when no chat budget is set at all.
        self._turns_capped = any(
            limits.any
            for limits in (
                rules.global_,
                rules.per_chat,
                rules.per_person,
                *rules.per_platform.values(),
                *rules.chat_overrides.values(),
                *rules.person_overrides.values(),
            )
        )

    async def for_turn(self, who: Attribution) -> Over | None:
        """The first budget a chat turn for ``who`` would start over, or None."""
        if not self._turns_capped:
            return None
        return await self._first_over(self._turn_budgets(who))

    async def for_background(self) -> Over | None:
        """The budget background work would start over (``background`` or ``global``)."""
        return await self._first_over(
            [
                _Budget("global", "The gateway's {} budget", Scope(), self._rules.global_),
                _Budget(
                    "background",
                    "The background {} budget",
                    Scope(kinds=BACKGROUND),
                    self._rules.background,
                ),
            ]
        )

    def _turn_budgets(self, who: Attribution) -> list[_Budget]:
        r = self._rules
        found = [_Budget("global", "The gateway's {} budget", Scope(), r.global_)]
        if who.platform is not None and who.platform in r.per_platform:
            scope = Scope(platform=who.platform, kinds=CHAT_KINDS)
            label = f"The {who.platform} {{}} budget"
            found.append(
                _Budget(f"platform:{who.platform}", label, scope, r.per_platform[who.platform])
            )
        if who.chat_key is not None:
            limits = r.per_chat.over(r.chat_overrides.get(who.chat_key, Limits()))
            scope = Scope(chat_key=who.chat_key, kinds=CHAT_KINDS)
            found.append(_Budget(f"chat:{who.chat_key}", "This chat's {} budget", scope, limits))
        if who.person is not None:
            limits = r.per_person.over(r.person_overrides.get(who.person, Limits()))
            scope = Scope(person=who.person, kinds=CHAT_KINDS)
            found.append(_Budget(f"person:{who.person}", "Your {} budget", scope, limits))
        return found

    async def _first_over(self, budgets: list[_Budget]) -> Over | None:
        now = self._clock.now()
        day, month = self.calendar.day(now), self.calendar.month(now)
        for budget in budgets:
            if not budget.limits.any:
                continue
            used = await self._sums.used(budget.scope, day_start=day.start, month_start=month.start)
            for key in LIMIT_KEYS:
                limit = getattr(budget.limits, key)
                if limit is not None and _amount(used, key) >= limit:
                    period = day if key.startswith("daily") else month
                    label = budget.label.format(_WORDS[key])
                    return Over(f"{budget.budget}:{key}", label, period)
        return None


def _amount(used: Used, key: LimitKey) -> float:
    return {
        "daily_tokens": used.day_tokens,
        "monthly_tokens": used.month_tokens,
        "daily_cost": used.day_cost,
        "monthly_cost": used.month_cost,
    }[key]
