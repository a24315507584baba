"""What push adapters do alike around a turn: "typing…", refusals, saved attachments.

- ``TypingIndicator`` shows typing until every turn waiting in a chat is done: one loop
  per chat (and thread), however many messages wait there, so typing never adds to a
  platform's rate limit. Sending it is a courtesy, never a reason to fail.
- ``RefusalLimiter`` answers someone not allowed at most once an hour, and forgets
  strangers so a public bot's memory does not grow without end.
- ``save_attachment`` writes a downloaded file off the event loop and names it for the
  agent; ``too_big`` and ``not_downloaded`` are the notes for files left out.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Hashable
from pathlib import Path
from typing import Any, Generic, TypeVar

from core.messages import Attachment
from core.tasks import TaskSet

log = logging.getLogger(__name__)

Key = TypeVar("Key", bound=Hashable)

REFUSE_AGAIN_AFTER_SECONDS = 3600.0
MAX_REMEMBERED_REFUSALS = 10_000


class TypingIndicator(Generic[Key]):
    """See the module docstring. ``send(key)`` shows typing once in that chat."""

    def __init__(
        self, send: Callable[[Key], Awaitable[Any]], tasks: TaskSet, *, every: float
    ) -> None:
        self._send = send
        self._tasks = tasks
        self._every = every
        self._waiting: dict[Key, set[asyncio.Future[Any]]] = {}

    def show(self, key: Key, turn: Awaitable[Any]) -> None:
        """Show typing in ``key``'s chat until ``turn`` is done."""
        waiting = self._waiting.setdefault(key, set())
        waiting.add(asyncio.ensure_future(asyncio.shield(turn)))
        if len(waiting) == 1:
            self._tasks.spawn(self._loop(key), name=f"typing:{key}")

    async def _loop(self, key: Key) -> None:
        try:
            while True:
                waiting = {t for t in self._waiting.get(key, set()) if not t.done()}
                if not waiting:
                    self._waiting.pop(key, None)  # no await since the check: nothing is lost
                    return
                self._waiting[key] = waiting
                try:
                    await self._send(key)
                except Exception as exc:  # a courtesy: never a reason to fail
                    log.debug("typing in %s not shown: %s", key, exc)
                await asyncio.wait(waiting, timeout=self._every)
        finally:
            for turn in self._waiting.pop(key, set()):
                turn.cancel()


class RefusalLimiter:
    """See the module docstring."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._refused_at: dict[str, float] = {}

    def due(self, user_id: str) -> bool:
        """Whether ``user_id`` should be told now (and, if so, remember telling them)."""
        now = self._now()
        last = self._refused_at.get(user_id)
        if last is not None and now - last <= REFUSE_AGAIN_AFTER_SECONDS:
            return False
        if len(self._refused_at) >= MAX_REMEMBERED_REFUSALS:
            cutoff = now - REFUSE_AGAIN_AFTER_SECONDS
            self._refused_at = {u: t for u, t in self._refused_at.items() if t > cutoff}
            if len(self._refused_at) >= MAX_REMEMBERED_REFUSALS:
                self._refused_at.clear()
        self._refused_at[user_id] = now
        return True


def too_big(name: str) -> str:
    return f"[{name} was not read: larger than the file size limit]"


def not_downloaded(name: str) -> str:
    return f"[{name} could not be downloaded]"


async def save_attachment(
    folder: Path, unique: str, name: str, mime: str, data: bytes
) -> tuple[Attachment, str]:
    """Write ``data`` under ``folder`` (off the event loop: a big file must not stall
    every chat); return the attachment and the note that names it to the agent."""
    path = folder / re.sub(r"[^A-Za-z0-9._-]", "_", f"{unique}-{name}")[:200]
    await asyncio.to_thread(_write_file, path, data)
    note = f"[attached {name} ({mime}, {len(data):,} bytes): {path}]"
    return Attachment(str(path), mime, name, len(data)), note


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
