"""A streamed preview on a chat platform: paced updates of one message (or draft).

``PacedPreview`` is the ``core.streaming.Preview`` the chat platforms share. It keeps
the text so far (``PreviewText``: the model's words and, while a tool runs, one progress
line under them) and a background task that shows it through the platform's
``PreviewSurface``, never faster than the ``PreviewPacer`` allows: at most one update
per chat per interval, within the bot's budget across chats, and nothing while the
platform has asked to wait (a ``DeliveryRateLimited`` from the surface holds the chat;
``PreviewPacer.hold`` without a chat holds every chat). Updates coalesce: whatever arrived while
waiting goes out in one update. A surface that keeps failing is given up on; the final
reply is sent by the outbox whatever happens here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Hashable
from typing import Protocol

from core.errors import DeliveryRateLimited
from core.tasks import TaskSet

log = logging.getLogger(__name__)

# Failed updates in a row after which a preview stops trying.
MAX_FAILURES = 3
ELLIPSIS = "…"


class PreviewSurface(Protocol):
    """Where a platform shows one preview: a draft, or a message it sends then edits."""

    async def show(self, text: str) -> None:
        """Show ``text`` (create the preview the first time). Raise
        ``DeliveryRateLimited`` when the platform asks to wait, any ``ChatgateError``
        for another refusal."""
        ...

    async def close(self) -> str | None:
        """No more updates: the platform message id the final reply takes over, or None
        (a draft: the final is sent as a new message)."""
        ...

    async def remove(self) -> None:
        """Take the preview away (no reply will take it over)."""
        ...


class PreviewPacer:
    """When a chat's preview may next change (see the module docstring); one per bot."""

    def __init__(
        self,
        *,
        interval: float = 1.0,
        per_second: float = 20.0,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._interval = interval
        self._per_second = per_second
        self._now = now
        self._next: dict[Hashable, float] = {}
        self._tokens = per_second
        self._refilled = now()
        self._bot_held_until = 0.0

    def delay(self, chat: Hashable) -> float:
        """Seconds until ``chat``'s preview may change (0: now)."""
        now = self._now()
        self._refill(now)
        wait = max(self._next.get(chat, 0.0), self._bot_held_until) - now
        if self._tokens < 1:
            wait = max(wait, (1 - self._tokens) / self._per_second)
        return max(wait, 0.0)

    def sent(self, chat: Hashable) -> None:
        """An update of ``chat``'s preview went out now."""
        now = self._now()
        self._refill(now)
        self._tokens -= 1
        self._next[chat] = now + self._interval

    def hold(self, seconds: float, chat: Hashable | None = None) -> None:
        """The platform asked to wait ``seconds``: for ``chat``, or the whole bot."""
        until = self._now() + seconds
        if chat is None:
            self._bot_held_until = max(self._bot_held_until, until)
        else:
            self._next[chat] = max(self._next.get(chat, 0.0), until)

    def forget(self, chat: Hashable) -> None:
        """``chat``'s preview is over: keep no state for it (a held chat stays held)."""
        if self._next.get(chat, 0.0) <= self._now():
            self._next.pop(chat, None)

    def _refill(self, now: float) -> None:
        self._tokens = min(
            self._per_second, self._tokens + (now - self._refilled) * self._per_second
        )
        self._refilled = now


class PreviewText:
    """The text a preview shows: the model's words so far, and the running tool's line."""

    def __init__(self) -> None:
        self._words: list[str] = []
        self._line = ""
        self._after_tool = False

    def add(self, delta: str) -> None:
        self._line = ""  # the model writes again: the tool is done
        if self._after_tool and delta.strip():
            # A new model message after a tool call starts a paragraph of its own; run
            # on, it would read "Let me look.Found it."
            self._after_tool = False
            delta = "\n\n" + delta.lstrip()
        self._words.append(delta)

    def tool(self, line: str) -> None:
        self._line = line
        self._after_tool = True

    def render(self, limit: int) -> str:
        """At most ``limit`` characters: the end of a longer text, after an ellipsis."""
        words = "".join(self._words).strip()
        text = f"{words}\n\n{self._line}" if words and self._line else words or self._line
        if len(text) > limit:
            text = ELLIPSIS + text[len(text) - limit + len(ELLIPSIS) :]
        return text


class PacedPreview:
    """See the module docstring. ``limit`` is the longest text the surface takes."""

    def __init__(
        self,
        surface: PreviewSurface,
        pacer: PreviewPacer,
        chat: Hashable,
        tasks: TaskSet,
        *,
        limit: int,
    ) -> None:
        self._surface = surface
        self._pacer = pacer
        self._chat = chat
        self._limit = limit
        self._text = PreviewText()
        self._changed = asyncio.Event()
        self._closing = asyncio.Event()
        self._shown = ""
        self._worker = tasks.spawn(self._show_updates(), name=f"preview:{chat}")

    async def text(self, delta: str) -> None:
        self._text.add(delta)
        self._changed.set()

    async def tool(self, line: str) -> None:
        self._text.tool(line)
        self._changed.set()

    async def finish(self) -> str | None:
        await self._stop()
        return await self._surface.close()

    async def discard(self) -> None:
        await self._stop()
        await self._surface.remove()

    async def _stop(self) -> None:
        """Let an update in flight finish, then no more."""
        self._closing.set()
        self._changed.set()
        with contextlib.suppress(Exception):  # the worker logs its own failures
            await self._worker
        self._pacer.forget(self._chat)

    async def _show_updates(self) -> None:
        failures = 0
        while failures < MAX_FAILURES:
            await self._changed.wait()
            self._changed.clear()
            await self._pause(self._pacer.delay(self._chat))
            if self._closing.is_set():
                return
            text = self._text.render(self._limit)
            if not text.strip() or text == self._shown:
                continue
            try:
                await self._surface.show(text)
            except DeliveryRateLimited as exc:
                self._pacer.hold(exc.retry_after, self._chat)
                self._changed.set()  # what was not shown goes out after the pause
                continue
            except Exception as exc:  # a preview is a view: the final is sent regardless
                failures += 1
                log.warning("preview update not shown (%s)", exc.__class__.__name__)
                continue
            failures = 0
            self._shown = text
            self._pacer.sent(self._chat)
        log.warning("preview given up after %d failed updates; the reply comes whole", failures)

    async def _pause(self, seconds: float) -> None:
        """Sleep ``seconds``, or less if the preview is closed meanwhile."""
        if seconds > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), seconds)
