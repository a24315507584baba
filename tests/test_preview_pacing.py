"""Paced previews: one update a second per chat, a bot-wide budget, 429s honoured, and a
preview that fails never holding anything up (``adapters.preview``)."""

from __future__ import annotations

import asyncio

import pytest

from adapters.preview import PacedPreview, PreviewPacer, PreviewText
from core.errors import DeliveryError, DeliveryRateLimited
from core.tasks import TaskSet


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_one_update_per_interval_per_chat() -> None:
    clock = Clock()
    pacer = PreviewPacer(interval=1.0, per_second=100, now=clock)

    first = pacer.delay("a")
    pacer.sent("a")
    right_after = pacer.delay("a")
    other_chat = pacer.delay("b")
    clock.now += 0.4
    later = pacer.delay("a")

    assert first == 0
    assert right_after == pytest.approx(1.0)
    assert other_chat == 0
    assert later == pytest.approx(0.6)


def test_the_bot_budget_spans_chats() -> None:
    clock = Clock()
    pacer = PreviewPacer(interval=1.0, per_second=2, now=clock)
    pacer.sent("a")
    pacer.sent("b")

    assert pacer.delay("c") == pytest.approx(0.5)
    clock.now += 0.5
    assert pacer.delay("c") == 0


def test_a_hold_for_the_bot_delays_every_chat() -> None:
    clock = Clock()
    pacer = PreviewPacer(now=clock)
    pacer.hold(7.0)
    pacer.hold(3.0, "a")

    assert pacer.delay("a") == pytest.approx(7.0)
    assert pacer.delay("b") == pytest.approx(7.0)


def test_preview_text_shows_the_tool_line_until_the_model_writes_again() -> None:
    text = PreviewText()
    text.add("Let me look.")
    text.tool("searching past sessions…")
    during = text.render(100)
    text.add(" Found it.")

    assert during == "Let me look.\n\nsearching past sessions…"
    assert text.render(100) == "Let me look.\n\nFound it."  # the answer's own paragraph
    assert text.render(8) == "…und it."


class Surface:
    """A surface that records what it shows; ``refuse`` raises instead, once each."""

    def __init__(self) -> None:
        self.shown: list[str] = []
        self.refuse: list[Exception] = []
        self.shown_event = asyncio.Event()
        self.attempts = asyncio.Queue[str]()
        self.removed = False

    async def show(self, text: str) -> None:
        self.attempts.put_nowait(text)
        if self.refuse:
            raise self.refuse.pop(0)
        self.shown.append(text)
        self.shown_event.set()

    async def close(self) -> str | None:
        return "preview-1"

    async def remove(self) -> None:
        self.removed = True


async def test_updates_coalesce_and_finish_names_the_message() -> None:
    surface = Surface()
    tasks = TaskSet("test")
    preview = PacedPreview(surface, PreviewPacer(interval=0.05), "chat", tasks, limit=100)

    await preview.text("Hel")
    await surface.shown_event.wait()
    await preview.text("lo ")
    await preview.text("world")
    taken_over = await preview.finish()
    await tasks.close()

    assert surface.shown[0] == "Hel"
    assert taken_over == "preview-1"


async def test_a_rate_limited_update_is_shown_after_the_pause() -> None:
    surface = Surface()
    surface.refuse.append(DeliveryRateLimited("429", retry_after=0.05))
    tasks = TaskSet("test")
    preview = PacedPreview(surface, PreviewPacer(interval=0.0), "chat", tasks, limit=100)

    await preview.text("Hello")
    await surface.shown_event.wait()
    await preview.discard()
    await tasks.close()

    assert surface.shown == ["Hello"]
    assert surface.removed


async def test_a_failing_surface_is_given_up_and_finish_still_answers() -> None:
    surface = Surface()
    surface.refuse.extend(DeliveryError("no") for _ in range(3))
    tasks = TaskSet("test")
    preview = PacedPreview(surface, PreviewPacer(interval=0.0), "chat", tasks, limit=100)

    tried = []
    for word in ("a", "b", "c"):
        await preview.text(word)
        tried.append(await surface.attempts.get())
    await preview.text("d")  # the surface would take this one: it is not asked
    taken_over = await preview.finish()
    await tasks.close()

    assert tried == ["a", "ab", "abc"]
    assert surface.attempts.empty()
    assert surface.shown == []
    assert taken_over == "preview-1"
