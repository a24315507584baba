"""``chatgate config show``: the effective configuration, secrets masked, each value with
where it came from (default, config.yaml, or the environment variable that set it)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from gateway.config import load_with_sources
from gateway.config_view import Row, effective

config_app = typer.Typer(no_args_is_help=True, help="The configuration this profile runs with.")
console = Console(highlight=False)


@config_app.command("show")
def show(
    as_json: Annotated[bool, typer.Option("--json", help="print the settings as JSON")] = False,
) -> None:
    """Every setting's effective value (secrets masked) and where it came from."""
    settings, sources = load_with_sources()
    home_source = "env CHATGATE_HOME" if os.environ.get("CHATGATE_HOME") else "default"
    rows = effective(settings, sources, home_source)
    if as_json:
        typer.echo(json.dumps([asdict(row) for row in rows], indent=2))
    else:
        console.print(_table(rows))


def _table(rows: list[Row]) -> Table:
    table = Table("setting", "value", "from")
    for row in rows:
        table.add_row(
            row.key, row.value, row.source, style="dim" if row.source == "default" else ""
        )
    table.columns[1].overflow = "fold"  # values are shown whole, never cut
    return table
