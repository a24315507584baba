"""Closing a set of background tasks ends even when a task will not stop: a shutdown
never hangs on one library's cleanup."""

from __future__ import annotations

import asyncio
import logging

import pytest

from core.tasks import TaskSet

GRACE = 0.05


async def _swallows_first_cancel(swallowed: asyncio.Event) -> None:
    """A reconnect loop around a cleanup that ate its cancellation (the MCP SDK's
    transports have done so): it goes on to wait for its next attempt."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        swallowed.set()
    await asyncio.Event().wait()


async def _never_stops(release: asyncio.Event, cancels: list[int]) -> None:
    while not release.is_set():
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancels.append(1)


async def test_a_task_that_swallowed_its_cancellation_is_cancelled_again() -> None:
    tasks = TaskSet("test")
    swallowed = asyncio.Event()
    task = tasks.spawn(_swallows_first_cancel(swallowed), name="stubborn")
    await asyncio.sleep(0)  # let it start waiting

    await tasks.close(grace=GRACE)

    assert swallowed.is_set()
    assert task.cancelled()
    assert len(tasks) == 0


async def test_a_task_that_never_stops_is_left_behind_and_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = TaskSet("test")
    release = asyncio.Event()
    cancels: list[int] = []
    task = tasks.spawn(_never_stops(release, cancels), name="deaf")
    await asyncio.sleep(0)

    with caplog.at_level(logging.WARNING, logger="core.tasks"):
        await tasks.close(grace=GRACE)

    assert not task.done()
    assert len(cancels) == 2
    messages = [r.getMessage() for r in caplog.records]
    assert any("test:deaf" in m and "cancelling again" in m for m in messages)
    assert any("test:deaf" in m and "left behind" in m for m in messages)
    release.set()
    await task


async def test_without_grace_close_waits_for_a_task_to_finish_its_cleanup() -> None:
    tasks = TaskSet("test")
    cleaned = asyncio.Event()
    proceed = asyncio.Event()

    async def tidy() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await proceed.wait()
            cleaned.set()

    tasks.spawn(tidy(), name="tidy")
    await asyncio.sleep(0)
    closing = asyncio.create_task(tasks.close())
    proceed.set()
    await closing

    assert cleaned.is_set()


async def test_closing_an_empty_set_returns_at_once() -> None:
    await TaskSet("test").close(grace=GRACE)
