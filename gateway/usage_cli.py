"""``chatgate usage``: tokens and cost of model calls, grouped by chat, person, platform
or kind, since a day (the first of this month by default; days in ``budgets.timezone``)."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import date, datetime
from enum import StrEnum
from typing import Annotated
from zoneinfo import ZoneInfo

import typer
from rich.console import Console
from rich.table import Table

from core.clock import SystemClock
from core.store.db import SessionDB
from core.store.usage import Scope, Total
from core.usage.periods import Calendar
from gateway.cli_tables import add_id_column
from gateway.config import load_settings
from gateway.json_output import JsonFlag, emit, iso
from gateway.runtime import migrate
from gateway.settings import Settings

console = Console(highlight=False)


class Group(StrEnum):
    chat = "chat"
    person = "person"
    platform = "platform"
    kind = "kind"


def usage(
    by: Annotated[Group | None, typer.Option("--by", help="group the rows by this")] = None,
    since: Annotated[
        str | None, typer.Option(help="from this day on (YYYY-MM-DD); default: this month")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """What model calls used and cost, in total or per group, largest first."""
    settings = load_settings()
    calendar = Calendar(ZoneInfo(settings.budgets.timezone))
    start = _start(calendar, since)
    key = by.value if by is not None else None
    totals = asyncio.run(_totals(settings, start, key))
    if as_json:
        rows = [{key or "group": t.key, **_numbers(t)} for t in totals]
        emit({"since": iso(start), "by": key, "rows": rows})
        return
    _print(totals, key, calendar.shown(start))


def _start(calendar: Calendar, since: str | None) -> float:
    if since is None:
        return calendar.month(SystemClock().now()).start
    try:
        day = date.fromisoformat(since)
    except ValueError:
        raise typer.BadParameter(
            f"a day as YYYY-MM-DD, not {since!r}", param_hint="--since"
        ) from None
    return datetime(day.year, day.month, day.day, tzinfo=calendar.zone).timestamp()


async def _totals(settings: Settings, since: float, by: str | None) -> list[Total]:
    await migrate(settings)
    async with SessionDB(settings.database_url) as db:
        return await db.usage.totals(Scope(), since=since, by=by)


def _numbers(total: Total) -> dict[str, object]:
    found = dataclasses.asdict(total)
    found.pop("key")
    return found


def _print(totals: list[Total], by: str | None, since: str) -> None:
    if not totals:
        console.print(f"No model calls since {since}.")
        return
    table = Table(title=f"Usage since {since}")
    if by is not None:
        add_id_column(table, by, [t.key or "-" for t in totals])
    for header in ("calls", "input", "output", "cache read", "cache write", "cost"):
        table.add_column(header, justify="right")
    for t in totals:
        cost = "-" if t.cost is None else f"{t.cost:.4f}"
        numbers = (t.calls, t.input_tokens, t.output_tokens)
        cells = [f"{n:,}" for n in (*numbers, t.cache_read_tokens, t.cache_write_tokens)]
        table.add_row(*([t.key or "-"] if by is not None else []), *cells, cost)
    console.print(table)


usage_app = typer.Typer()
usage_app.command("usage")(usage)
