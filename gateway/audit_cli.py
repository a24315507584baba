"""``chatgate audit``: what the gateway did, from the audit ledger (metadata only).

``list`` prints the newest events (``--since``, ``--event``, ``--limit``), ``summary``
counts them by kind, ``export --jsonl`` writes every event as one JSON object a line, to a
file or stdout. ``--since`` takes a date or a date and time (ISO 8601, UTC unless it says
otherwise).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from core.store.audit import AuditRecord, AuditStore
from core.store.db import SessionDB
from gateway.config import load_settings
from gateway.json_output import JsonFlag, emit, iso
from gateway.runtime import migrate

T = TypeVar("T")

audit_app = typer.Typer(no_args_is_help=True, help="The audit ledger: list, summary, export.")
console = Console(highlight=False)
_PAGE = 1000


def _since(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        at = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise typer.BadParameter(f"not a date: {text!r} (e.g. 2026-12-01)") from exc
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


Since = Annotated[
    str | None, typer.Option("--since", help="from this date or time on (ISO 8601, UTC)")
]


def _with_audit(fn: Callable[[AuditStore], Awaitable[T]]) -> T:
    settings = load_settings()

    async def go() -> T:
        await migrate(settings)
        async with SessionDB(settings.database_url) as db:
            return await fn(db.audit)

    return asyncio.run(go())


def event_json(record: AuditRecord) -> dict[str, Any]:
    return {**record.as_json(), "at": iso(record.at)}


@audit_app.command("list")
def list_events(
    since: Since = None,
    event: Annotated[str | None, typer.Option("--event", help="only this kind")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="at most this many")] = 50,
    json_: JsonFlag = False,
) -> None:
    """The newest events, oldest of them first."""
    start = _since(since)
    found = _with_audit(lambda a: a.rows(since=start, event=event, limit=limit, newest_first=True))
    found.reverse()
    if json_:
        emit([event_json(r) for r in found])
        return
    table = Table("at", "event", "person", "chat", "session", "detail", box=None)
    for r in found:
        detail = json.dumps(r.detail, sort_keys=True) if r.detail else ""
        cells = (iso(r.at) or "", r.event, r.person or "", r.chat_key or "", r.session_id or "")
        table.add_row(*cells, detail)
    console.print(table if found else "no audit events")


@audit_app.command("summary")
def summary(since: Since = None, json_: JsonFlag = False) -> None:
    """How many events of each kind."""
    start = _since(since)
    counts = _with_audit(lambda a: a.summary(since=start))
    if json_:
        emit({"since": iso(start), "total": sum(counts.values()), "events": counts})
        return
    for name in sorted(counts):
        console.print(f"{name:<22} {counts[name]}", markup=False)
    console.print(f"{'total':<22} {sum(counts.values())}", markup=False)


@contextmanager
def _output(path: Path | None) -> Iterator[IO[str]]:
    if path is None:
        yield sys.stdout
        return
    with path.open("w", encoding="utf-8") as out:
        yield out


@audit_app.command("export")
def export(
    jsonl: Annotated[bool, typer.Option("--jsonl", help="one JSON object a line")] = False,
    since: Since = None,
    file: Annotated[Path | None, typer.Argument(help="where to write (default: stdout)")] = None,
) -> None:
    """Every event (from ``--since`` on), oldest first, as JSON lines."""
    if not jsonl:
        raise typer.BadParameter("the only export format is --jsonl", param_hint="--jsonl")
    start = _since(since)

    async def write(store: AuditStore) -> int:
        count, after = 0, 0
        with _output(file) as out:
            while page := await store.rows(since=start, after_id=after, limit=_PAGE):
                for record in page:
                    out.write(json.dumps(event_json(record), ensure_ascii=False) + "\n")
                count, after = count + len(page), page[-1].id
        return count

    count = _with_audit(write)
    if file is not None:
        console.print(f"wrote {file}: {count} events", markup=False)
