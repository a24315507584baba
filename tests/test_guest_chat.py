"""``chatgate chat`` is a guest on the database a ``chatgate run`` owns: it answers its own
chat and nothing else. It recovers no other chat's pending messages (the gateway's
in-flight turns are not run a second time) and fires no scheduled job (the Curator's
first check arms it; the guest never does).

Real ``chatgate run`` and ``chatgate chat`` subprocesses on one SQLite home, the fake
model holding the gateway's turns open.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_cli import (
    chatgate,
    cli_env,
    client_for,
    gateway_process,
    replies_for,
    wait_ready,
)


async def test_chat_beside_a_gateway_answers_only_its_own_chat(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    env = fake_openai.gateway_env()
    release = asyncio.Event()
    for chat in ("c2", "c3"):
        fake_openai.block(release, when=f"stuck in {chat}")

    with gateway_process(home, env) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            for chat in ("c2", "c3"):
                body = {"chat_id": chat, "user_id": "u", "text": f"stuck in {chat}"}
                body["message_id"] = f"m-{chat}"
                queued = await client.post("/webhook/demo", json=body, params={"wait": "false"})
                assert queued.status_code == 202, queued.text
                await fake_openai.arrival(f"stuck in {chat}").wait()
            terminal = await asyncio.to_thread(
                chatgate, "chat", stdin="hello from the terminal\n", env=cli_env(**env)
            )
            asked_while_chatting = {
                chat: len(fake_openai.requests_for(f"stuck in {chat}")) for chat in ("c2", "c3")
            }
            release.set()
            answers = {c: await replies_for(client, f"m-{c}", chat_id=c) for c in ("c2", "c3")}

    assert terminal.returncode == 0, terminal.stderr
    assert "echo: hello from the terminal" in terminal.stdout
    assert asked_while_chatting == {"c2": 1, "c3": 1}  # only the gateway's own turns
    assert {chat: [r["text"] for r in found] for chat, found in answers.items()} == {
        "c2": ["echo: stuck in c2"],
        "c3": ["echo: stuck in c3"],
    }


def curator_armed(home: Path) -> bool:
    with sqlite3.connect(home / "state.db") as conn:
        row = conn.execute(
            "SELECT value FROM scheduler_state WHERE key = 'curator.armed_at'"
        ).fetchone()
    return row is not None


async def armed_within(home: Path, *, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not curator_armed(home):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)  # bounded poll: another process gives us no event
    return True


async def test_chat_fires_no_scheduled_job_the_gateway_does(home: Path) -> None:
    chatted = await asyncio.to_thread(chatgate, "chat", stdin="hello\nhow are you\n/status\n")
    armed_by_chat = curator_armed(home)
    with gateway_process(home, {}) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            armed_by_gateway = await armed_within(home, seconds=30)  # its first check: at start

    assert chatted.returncode == 0, chatted.stderr
    assert not armed_by_chat
    assert armed_by_gateway
