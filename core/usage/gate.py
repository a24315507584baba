"""Where budgets stop work: a chat turn before its first model call, background work
before each of its calls.

A turn over a budget is answered with one line (which budget, when it resets) and never
reaches the model; the owners of the chat's platform hear once per budget and period,
in their direct chats, whichever replica refused first (``UsageStore.claim_notice``).
Background work over its budget is skipped with one WARNING line per period.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence

from core.clock import Clock
from core.errors import BudgetExceeded
from core.messages import ChatTarget, InboundMessage
from core.store.usage import UsageStore
from core.usage.attribution import of_message
from core.usage.budgets import Budgets, Over

log = logging.getLogger(__name__)

Notify = Callable[[ChatTarget, Sequence[str]], Awaitable[object]]
OWNER_NOTICE = "Budget reached: {budget} for {period}. Work over it is refused until {until}."


class BudgetGate:
    """See the module docstring."""

    def __init__(
        self,
        budgets: Budgets,
        store: UsageStore,
        clock: Clock,
        owners: Mapping[str, Collection[str]],
        notify: Notify,
    ) -> None:
        self._budgets = budgets
        self._store = store
        self._clock = clock
        self._owners = owners
        self._notify = notify
        # Notices this process knows are claimed: no write per refused turn after the first.
        self._claimed: set[tuple[str, str]] = set()

    async def refusal(self, msg: InboundMessage) -> str | None:
        """The line that answers ``msg`` instead of the model, or None: it may go ahead."""
        who = of_message(msg.platform, msg.chat_id, msg.user_id, msg.route)
        over = await self._budgets.for_turn(who)
        if over is None:
            return None
        log.info("turn refused: a budget is used up (%s)", over.budget.partition(":")[0])
        if await self._first(over):
            await self._tell_owners(over, msg.platform, msg.route)
        return over.line(self._budgets.calendar)

    async def check_background(self, kind: str) -> None:
        """Raise ``BudgetExceeded`` when background work may not call the model now."""
        over = await self._budgets.for_background()
        if over is None:
            return
        if await self._first(over):
            log.warning(
                "background work skipped: budget %s used up for %s", over.budget, over.period.key
            )
        else:
            log.info("background %s skipped: budget %s used up", kind, over.budget)
        raise BudgetExceeded(over.line(self._budgets.calendar))

    async def _first(self, over: Over) -> bool:
        key = (over.budget, over.period.key)
        if key in self._claimed:
            return False
        first = await self._store.claim_notice(over.budget, over.period.key, self._clock.now())
        if len(self._claimed) >= 10_000:  # bounded: forgetting only costs a write again
            self._claimed.clear()
        self._claimed.add(key)
        return first

    async def _tell_owners(self, over: Over, platform: str, route: str | None) -> None:
        text = OWNER_NOTICE.format(
            budget=over.budget,
            period=over.period.key,
            until=self._budgets.calendar.shown(over.period.end),
        )
        for owner in sorted(self._owners.get(platform, ())):
            await self._notify(ChatTarget(platform, owner, route=route), [text])
