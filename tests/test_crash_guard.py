"""The crash-loop guard against a real ``chatgate run``: a message whose turn is in flight
at three kill -9s in a row is set aside, and its chat starts afresh."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import time
from pathlib import Path

import httpx
import yaml

from core.crash_guard import SET_ASIDE
from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_cli import (
    client_for,
    gateway_process,
    inbox_status,
    replies_for,
    wait_ready,
    write_yaml,
)

POISON = {"chat_id": "c1", "user_id": "u1", "text": "poison pill", "message_id": "m-poison"}


async def model_reached(fake: FakeOpenAIServer, marker: str, times: int) -> None:
    """Wait (bounded) until the fake model has seen ``marker`` ``times`` times."""
    deadline = time.monotonic() + 30
    while fake.started.get(marker, 0) < times:
        assert time.monotonic() < deadline, f"{marker!r} reached the model too few times"
        await asyncio.sleep(0.02)  # noqa: ASYNC110 - the fake's log, filled by other requests


async def say(client: httpx.AsyncClient, text: str) -> httpx.Response:
    response = await client.post(
        "/webhook/demo", json={"chat_id": "c1", "user_id": "u1", "text": text}
    )
    assert response.status_code == 200, response.text
    return response


def session_end_reason(home: Path, session_id: str) -> str | None:
    with sqlite3.connect(home / "state.db") as conn:
        row = conn.execute("SELECT end_reason FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else row[0]


async def test_a_message_in_flight_at_three_crashes_is_set_aside_and_the_chat_starts_afresh(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_yaml(home, yaml.safe_dump({"model": {"retry_base_seconds": 0.01}}))
    env = fake_openai.gateway_env()
    never = asyncio.Event()  # the model never answers the poison: every start hangs on it
    for _ in range(4):
        fake_openai.block(never, when="poison")
    for crash in (1, 2, 3):
        with gateway_process(home, env) as (proc, url):
            async with client_for(url) as client:
                await wait_ready(proc, client)
                if crash == 1:
                    hello = await say(client, "hello")
                    queued = await client.post(
                        "/webhook/demo", params={"wait": "false"}, json=POISON
                    )
                    assert queued.status_code == 202, queued.text
                await model_reached(fake_openai, "poison", crash)  # recovered, in flight
            proc.send_signal(signal.SIGKILL)
            await asyncio.to_thread(proc.wait, 30)
    status_after_crashes = inbox_status(home, "m-poison")

    with gateway_process(home, env) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            set_aside = await replies_for(client, "m-poison")
            after = await say(client, "are you back?")
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 30) == 0

    assert status_after_crashes == "pending"
    assert fake_openai.started["poison"] == 3  # not replayed a fourth time
    assert [r["text"] for r in set_aside] == [SET_ASIDE.format(count=3)]
    assert inbox_status(home, "m-poison") == "failed"
    old_session = hello.json()["session_id"]
    assert after.json()["session_id"] != old_session
    assert session_end_reason(home, old_session) == "crash_loop"
    assert [r["text"] for r in after.json()["replies"]] == ["echo: are you back?"]
    fresh = fake_openai.requests_for("are you back?")[-1]
    assert [m["role"] for m in fresh["messages"]] == ["system", "user"]  # no old history


async def test_a_turn_that_completes_between_crashes_resets_the_count(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_yaml(home, yaml.safe_dump({"model": {"retry_base_seconds": 0.01}}))
    env = fake_openai.gateway_env()
    never = asyncio.Event()
    for _ in range(2):  # "alpha" hangs at crashes 1 and 2, then is answered
        fake_openai.block(never, when="alpha")
    fake_openai.block(never, when="beta")  # "beta" hangs at crash 3, then is answered
    posts = {1: ("alpha", "m-alpha"), 3: ("beta", "m-beta")}
    for crash, reached in ((1, ("alpha", 1)), (2, ("alpha", 2)), (3, ("beta", 1))):
        with gateway_process(home, env) as (proc, url):
            async with client_for(url) as client:
                await wait_ready(proc, client)
                if crash == 3:
                    await replies_for(client, "m-alpha")  # the chat's turn completes
                if crash in posts:
                    text, message_id = posts[crash]
                    body = {**POISON, "text": text, "message_id": message_id}
                    await client.post("/webhook/demo", params={"wait": "false"}, json=body)
                await model_reached(fake_openai, *reached)
            proc.send_signal(signal.SIGKILL)
            await asyncio.to_thread(proc.wait, 30)

    with gateway_process(home, env) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            beta = await replies_for(client, "m-beta")
        proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proc.wait, 30)

    # Three crashes in a row had this chat's turn in flight, but one turn completed
    # between them: the count started again, and "beta" is answered, not set aside.
    assert [r["text"] for r in beta] == ["echo: beta"]
    assert inbox_status(home, "m-beta") == "done"
    assert (fake_openai.started["alpha"], fake_openai.started["beta"]) == (3, 2)


async def test_turns_cut_short_by_graceful_stops_are_not_counted_as_crashes(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    config = {"model": {"retry_base_seconds": 0.01}, "server": {"shutdown_grace": 0.2}}
    write_yaml(home, yaml.safe_dump(config))
    env = fake_openai.gateway_env()
    never = asyncio.Event()
    for _ in range(3):  # in flight at three SIGTERMs, each past the grace; then answered
        fake_openai.block(never, when="long")
    body = {**POISON, "text": "long job", "message_id": "m-long"}
    for stop in (1, 2, 3):
        with gateway_process(home, env) as (proc, url):
            async with client_for(url) as client:
                await wait_ready(proc, client)
                if stop == 1:
                    await client.post("/webhook/demo", params={"wait": "false"}, json=body)
                await model_reached(fake_openai, "long", stop)
            proc.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(proc.wait, 30) == 0

    with gateway_process(home, env) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            answered = await replies_for(client, "m-long")
        proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proc.wait, 30)

    assert [r["text"] for r in answered] == ["echo: long job"]
    assert fake_openai.started["long"] == 4
