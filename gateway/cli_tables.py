"""Tables the CLI prints: the id an operator copies next is never cut."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table


def add_id_column(table: Table, header: str, ids: Iterable[str]) -> None:
    """A column as wide as its longest id: the other columns give way to it, and on a
    terminal too narrow even for that, rich crops the table's right edge, not the id."""
    widest = max((len(value) for value in ids), default=0)
    table.add_column(header, min_width=max(widest, len(header)), overflow="fold")
