"""Handing a run's output (or a one-line notice) to its target: a chat or a local file.

Chats are reached through a ``notify`` callback the core provides (it queues the outbox
and pushes to the adapter), so this package never touches adapters. Files are appended
to, each run under a header line, so a file target reads as a log of the job's runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from core.cron.targets import FileTarget, Origin, file_path, parse_target
from core.errors import TargetError
from core.messages import ChatTarget
from core.store.cron import CronJob

Notify = Callable[[ChatTarget, list[str], str | None], Awaitable[None]]
Resolved = ChatTarget | FileTarget
SILENT_MARK = "[SILENT]"
NOTICE_CHARS = 300


def is_silent(output: str) -> bool:
    """Output that starts with ``[SILENT]`` (after leading space) is not delivered."""
    return output.lstrip().startswith(SILENT_MARK)


def resolve(job: CronJob) -> Resolved:
    """The job's target as a chat or a file; ``origin`` becomes the chat that made it."""
    target = parse_target(job.deliver)
    if not isinstance(target, Origin):
        return target
    if job.origin is None:
        raise TargetError(f"job {job.id} delivers to 'origin' but no chat created it")
    return job.origin


def notice(job: CronJob, what: str) -> str:
    """A one-line message about a run that produced no output to deliver."""
    line = " ".join(what.split())
    if len(line) > NOTICE_CHARS:
        line = line[: NOTICE_CHARS - 1] + "…"
    return f'Scheduled task "{job.name}" {line}'


class Deliverer:
    """Sends text to a resolved target; file paths are read against ``home``."""

    def __init__(self, notify: Notify, home: Path) -> None:
        self._notify = notify
        self._home = home

    async def send(
        self, job: CronJob, target: Resolved, text: str, session_id: str | None, at: float
    ) -> None:
        if isinstance(target, ChatTarget):
            await self._notify(target, [text], session_id)
            return
        path = file_path(target, self._home)
        await asyncio.to_thread(_append, path, _header(job, at) + text.rstrip() + "\n\n")


def _header(job: CronJob, at: float) -> str:
    when = datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"## {job.name} ({job.id}) at {when}\n\n"


def _append(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(text)
