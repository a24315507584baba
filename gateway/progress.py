"""Progress bars for long CLI work (backup, restore, migrations), only on a terminal.

A script or a log reading the output gets no bar and no control characters: off a
terminal ``progress_bar`` yields a ``Bar`` that does nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
)


class Bar:
    """Where long work reports how far it got; this one reports nowhere."""

    def update(self, completed: float, total: float | None = None) -> None:
        """``completed`` of ``total`` units done (``total`` unchanged when None)."""

    def advance(self, amount: float) -> None:
        """``amount`` more units done."""


class _RichBar(Bar):
    def __init__(self, progress: Progress, task: TaskID) -> None:
        self._progress = progress
        self._task = task

    def update(self, completed: float, total: float | None = None) -> None:
        self._progress.update(self._task, completed=completed, total=total)

    def advance(self, amount: float) -> None:
        self._progress.advance(self._task, amount)


@contextmanager
def progress_bar(
    description: str, total: float | None = None, *, in_bytes: bool = False
) -> Iterator[Bar]:
    """A rich progress bar on stderr when it is a terminal, else a silent ``Bar``."""
    console = Console(stderr=True)
    if not console.is_terminal:
        yield Bar()
        return
    columns: list[ProgressColumn] = [TextColumn("{task.description}"), BarColumn()]
    columns.append(DownloadColumn() if in_bytes else MofNCompleteColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        yield _RichBar(progress, progress.add_task(description, total=total))
