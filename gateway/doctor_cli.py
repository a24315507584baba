"""``chatgate doctor``: the checks of ``gateway.doctor`` as a table (or JSON), exit 1 when
any fails."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from gateway.doctor import Check

console = Console(highlight=False)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="print the checks as JSON")] = False,
    within: Annotated[
        float, typer.Option("--timeout", min=0.1, max=120, help="seconds each check may take")
    ] = 5.0,
) -> None:
    """Check the config, the home, the database, the model and every enabled platform;
    each failure comes with its fix. Exit 1 if anything fails."""
    # Here, not at the top: the checks import the store and every client, and the CLI
    # registers this command for every invocation.
    from gateway.doctor import diagnose, failed

    checks = asyncio.run(diagnose(within=within))
    if as_json:
        body = {"ok": not failed(checks), "checks": [asdict(check) for check in checks]}
        typer.echo(json.dumps(body, indent=2))
    else:
        console.print(_table(checks))
    if failed(checks):
        raise typer.Exit(1)


def _table(checks: list[Check]) -> Table:
    table = Table("check", "", "found", "fix")
    for check in checks:
        mark = "[green]ok[/]" if check.status == "ok" else "[red]FAIL[/]"
        # What a check found is text, not rich markup.
        table.add_row(Text(check.name), mark, Text(check.detail), Text(check.fix))
    return table
