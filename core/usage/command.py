"""``/usage``: what this chat and the asking person used today and this month; owners
also see the whole gateway. Days and months are those of ``budgets.timezone``."""

from __future__ import annotations

from core.clock import Clock
from core.commands import Command, CommandHost, CommandReply
from core.store.records import InboxItem
from core.store.usage import Scope, UsageStore
from core.usage.periods import Calendar
from core.usage.report import tokens_line


def usage_command(store: UsageStore, calendar: Calendar, clock: Clock) -> Command:
    async def usage(host: CommandHost, item: InboxItem, args: str) -> CommandReply:
        msg = item.message
        now = clock.now()
        day, month = calendar.day(now), calendar.month(now)
        scopes = [
            ("This chat", Scope(chat_key=f"{msg.platform}:{msg.chat_id}")),
            ("You", Scope(person=f"{msg.platform}:{msg.user_id}")),
        ]
        if host.is_owner(msg):
            scopes.append(("Whole gateway", Scope()))
        lines = [f"Usage ({calendar.zone.key}; today {day.key}, this month {month.key}):"]
        for name, scope in scopes:
            for period, since in (("today", day.start), ("this month", month.start)):
                totals = await store.totals(scope, since=since)
                lines.append(f"{name} {period}: {tokens_line(totals[0] if totals else None)}")
        return CommandReply("\n".join(lines))

    return Command("usage", "tokens and cost of this chat and you, today and this month", usage)
