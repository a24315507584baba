"""``chatgate run`` stops gracefully on SIGTERM: intake stops, running turns get the
grace period, the rest wait for the next start, and the process exits 0.

A real ``chatgate run`` subprocess against the fake model, which holds turns open.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest
import yaml

from gateway.http_server import SAME_STOP_SECONDS
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway
from tests.test_cli import (
    client_for,
    gateway_process,
    inbox_status,
    replies_for,
    run_log,
    wait_ready,
    write_yaml,
)

GRACE = 3.0


async def refused_while_stopping(client: httpx.AsyncClient) -> tuple[httpx.Response, str]:
    """POST until the stopping gateway refuses (bounded): the signal is handled in the
    server's next tick, which no event announces to another process. Returns the
    refusal and the refused message's id."""
    deadline = time.monotonic() + 5
    attempts = itertools.count()
    while True:
        message_id = f"m-late-{next(attempts)}"
        body = {"chat_id": "c3", "user_id": "u3", "text": "too late", "message_id": message_id}
        response = await client.post("/webhook/demo", json=body, params={"wait": "false"})
        if response.status_code == 503:
            return response, message_id
        assert response.status_code == 202, response.text
        assert time.monotonic() < deadline, "the gateway never stopped taking messages"
        await asyncio.sleep(0.05)


async def test_sigterm_finishes_running_turns_leaves_the_rest_and_exits_0(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_yaml(home, yaml.safe_dump({"server": {"shutdown_grace": GRACE}}))
    finishing, stuck = asyncio.Event(), asyncio.Event()  # ``stuck`` is never set
    fake_openai.block(finishing, when="nearly done")
    fake_openai.block(stuck, when="stuck")
    nearly = {"chat_id": "c1", "user_id": "u1", "text": "nearly done", "message_id": "m-ok"}
    held = {"chat_id": "c2", "user_id": "u2", "text": "stuck", "message_id": "m-stuck"}

    with gateway_process(home, fake_openai.gateway_env()) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            waiting = asyncio.ensure_future(client.post("/webhook/demo", json=nearly))
            queued = await client.post("/webhook/demo", json=held, params={"wait": "false"})
            await fake_openai.arrival("nearly done").wait()
            await fake_openai.arrival("stuck").wait()
            signalled = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            refused, late = await refused_while_stopping(client)
            ready = await client.get("/readyz")
            finishing.set()  # this turn finishes inside the grace period
            answered = await waiting
        code = await asyncio.to_thread(proc.wait, 30)
        stopped_after = time.monotonic() - signalled
    log = run_log(home)
    status_after_stop = {m: inbox_status(home, m) for m in ("m-ok", "m-stuck", late)}

    with gateway_process(home, fake_openai.gateway_env()) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            recovered = await replies_for(client, "m-stuck", chat_id="c2")
        proc.send_signal(signal.SIGTERM)
        restarted_code = await asyncio.to_thread(proc.wait, 30)

    assert queued.status_code == 202
    assert refused.json() == {"error": "the gateway is starting or stopping; retry shortly"}
    assert refused.headers["retry-after"] == "5"
    assert ready.status_code == 503
    assert ready.json() == {"status": "stopping"}
    assert answered.status_code == 200, answered.text
    assert [r["text"] for r in answered.json()["replies"]] == ["echo: nearly done"]
    assert code == 0
    assert GRACE <= stopped_after < GRACE + 5  # the stuck turn had the whole grace period
    assert status_after_stop == {"m-ok": "done", "m-stuck": "pending", late: None}
    assert "Traceback" not in log
    assert "SIGTERM received: stopping gracefully" in log
    assert "cancelled 1 turn(s) still running after 3 s; they run again at the next start" in log
    assert [r["text"] for r in recovered] == ["echo: stuck"]
    assert restarted_code == 0
    assert inbox_status(home, "m-stuck") == "done"


async def test_one_stop_delivered_twice_still_gives_running_turns_their_grace(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    # ``make run`` stopped with SIGTERM: the process group gets it, and make forwards it.
    write_yaml(home, yaml.safe_dump({"server": {"shutdown_grace": GRACE}}))
    finishing = asyncio.Event()
    fake_openai.block(finishing, when="nearly done")
    nearly = {"chat_id": "c1", "user_id": "u1", "text": "nearly done", "message_id": "m-ok"}

    with gateway_process(home, fake_openai.gateway_env()) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            waiting = asyncio.ensure_future(client.post("/webhook/demo", json=nearly))
            await fake_openai.arrival("nearly done").wait()
            signalled = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            await refused_while_stopping(client)  # the first one was handled
            assert time.monotonic() - signalled < SAME_STOP_SECONDS, "too slow to test"
            proc.send_signal(signal.SIGTERM)
            # Taken as a second stop, it would end the gateway within a tick or two.
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(proc.wait, 2 * SAME_STOP_SECONDS)
            still_in_grace = proc.poll() is None
            finishing.set()
            answered = await waiting
        code = await asyncio.to_thread(proc.wait, 30)
    log = run_log(home)

    assert still_in_grace
    assert answered.status_code == 200, answered.text
    assert [r["text"] for r in answered.json()["replies"]] == ["echo: nearly done"]
    assert code == 0
    assert "second stop signal" not in log


async def test_a_later_second_signal_cuts_the_grace_short(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_yaml(home, yaml.safe_dump({"server": {"shutdown_grace": 60}}))
    fake_openai.block(asyncio.Event(), when="stuck")  # never released
    held = {"chat_id": "c2", "user_id": "u2", "text": "stuck", "message_id": "m-stuck"}

    with gateway_process(home, fake_openai.gateway_env()) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            await client.post("/webhook/demo", json=held, params={"wait": "false"})
            await fake_openai.arrival("stuck").wait()
            signalled = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            await refused_while_stopping(client)
        # A person pressing Ctrl-C again: later than one stop delivered twice (with a
        # margin: the gateway notes the first signal a little after it was sent).
        later = signalled + SAME_STOP_SECONDS + 0.5
        await asyncio.sleep(max(0.0, later - time.monotonic()))
        proc.send_signal(signal.SIGINT)
        code = await asyncio.to_thread(proc.wait, 30)
        stopped_after = time.monotonic() - signalled
    log = run_log(home)

    assert code == 0
    assert stopped_after < 15  # not the 60 s grace
    assert "second stop signal: cancelling the running turns now" in log
    assert inbox_status(home, "m-stuck") == "pending"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_an_idle_gateway_stops_at_once_with_exit_0(home: Path, sig: signal.Signals) -> None:
    with gateway_process(home, {}) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
        signalled = time.monotonic()
        proc.send_signal(sig)
        code = await asyncio.to_thread(proc.wait, 30)
        elapsed = time.monotonic() - signalled
    log = run_log(home)

    assert code == 0
    assert elapsed < 3  # nothing to wait for: the grace period is not sat out
    assert f"{sig.name} received: stopping gracefully" in log
    assert "Application shutdown complete" in log
    assert "Traceback" not in log


@pytest.mark.usefixtures("testroom")
async def test_what_a_push_platform_hands_in_while_stopping_is_kept_for_the_next_start(
    home: Path,
) -> None:
    # A push platform cannot answer "retry later" as an HTTP client can: what it hands
    # in while the gateway stops is stored and answered after the restart, not lost.
    async with running_gateway(home) as gw:
        before = await gw.client.post("/testroom/say", json={"text": "before"})
        await gw.gateway.drain()
        during = await gw.client.post("/testroom/say", json={"text": "during the stop"})
        refused = await gw.say("webhook during the stop")
        sent_while_stopping = (await gw.client.get("/testroom/sent")).json()
    async with running_gateway(home) as gw:
        await gw.gateway.core.until_idle("testroom:lobby")
        sent_after_restart = (await gw.client.get("/testroom/sent")).json()

    assert before.status_code == during.status_code == 200
    [answered] = sent_while_stopping  # nothing for the message handed in while stopping
    assert 'You said: "before"' in answered["text"]
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "5"
    [recovered] = sent_after_restart
    assert 'You said: "during the stop"' in recovered["text"]
