"""Sub-commands of ``chatgate`` that are imported only when they run.

Each command module pulls in the settings, the store and through them SQLAlchemy,
Alembic and the platform libraries: several seconds that ``chatgate --help`` or
``chatgate init`` should not pay. The root group lists a light stand-in (name and one
line of help) for each lazy command and swaps in the real one when it is invoked.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import typer
from typer.core import TyperGroup

from core.record import record

if TYPE_CHECKING:
    # typer 0.29 ships its own click; its Group is what TyperGroup extends.
    from typer import _click


@record
class LazyCommand:
    """A command (or group) found as ``attr`` of ``module``: a ``typer.Typer``."""

    module: str
    attr: str
    help: str
    group: bool = True  # False: the Typer holds one command of that name


class LazyGroup(TyperGroup):
    """A root group that loads its lazy commands on first use (see ``lazy_root``)."""

    lazy: ClassVar[Mapping[str, LazyCommand]] = {}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name, entry in self.lazy.items():
            self.commands[name] = TyperGroup(name=name, help=entry.help)

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name in self.lazy:
            self.commands[name] = load(name, self.lazy[name])
        return super().resolve_command(ctx, args)


def lazy_root(commands: Mapping[str, LazyCommand]) -> type[LazyGroup]:
    """A ``LazyGroup`` class for ``typer.Typer(cls=...)`` with these lazy commands."""
    return type("ChatgateGroup", (LazyGroup,), {"lazy": dict(commands)})


def load(name: str, entry: LazyCommand) -> _click.Command:
    """Import ``entry``'s module and build the click command typer would have built."""
    found = getattr(importlib.import_module(entry.module), entry.attr)
    holder = found
    if entry.group:
        holder = typer.Typer()
        holder.add_typer(found, name=name)
    return typer.main.get_group(holder).commands[name]
