"""Chaos: ``chatgate run`` killed with SIGKILL at 5 random moments under load.

2,000 messages over 200 chats are POSTed with ``wait=false`` (each chat's messages one
after another, the chats at once) while the gateway is killed and restarted 5 times,
at moments drawn from a seeded generator (the seed is printed; set
``CHATGATE_CHAOS_SEED`` to replay one). A sender whose request fails because the
gateway is down (refused, reset, 503) sends the same ``message_id`` again once the
gateway is back, until it is accepted: the gateway de-duplicates by that id. Then every
accepted message must have exactly one user row and one reply, in send order per chat.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import subprocess
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_cli import client_for, gateway_process, wait_ready, write_yaml

CHATS = 200
PER_CHAT = 10
KILLS = 5
# Kills are this many accepted messages apart at least, so that what a restart
# recovers can finish before the next kill (else the crash-loop guard would rightly
# set a message aside after 3 kills in a row, and the counts would mean less).
MIN_GAP = 200
# A bound, not a budget: six process starts dominate, and a clean clone's first start
# compiles every module while CI may share two cores (150 s was exceeded there).
DEADLINE_SECONDS = 300.0


@dataclass
class Load:
    """What the senders and the killer share: where the gateway is, what got in."""

    url: str | None = None
    up: asyncio.Event = field(default_factory=asyncio.Event)
    accepted: list[str] = field(default_factory=list)
    retries: int = 0
    starting_seconds: float = 0.0  # spent waiting for a (re)started gateway to be ready
    progress: asyncio.Event = field(default_factory=asyncio.Event)

    def gateway_at(self, url: str | None) -> None:
        self.url = url
        if url is None:
            self.up.clear()
        else:
            self.up.set()

    async def until_accepted(self, count: int) -> None:
        while len(self.accepted) < count:
            self.progress.clear()
            await self.progress.wait()


def message_id(chat: int, n: int) -> str:
    return f"c{chat}-m{n}"


async def send(load: Load, client: httpx.AsyncClient, chat: int, n: int) -> None:
    """POST one message until it is accepted, retrying the same id while the gateway is
    down or stopping."""
    mid = message_id(chat, n)
    body = {"chat_id": f"c{chat}", "user_id": "u1", "text": f"n{n}", "message_id": mid}
    while True:
        await load.up.wait()
        url = load.url
        try:
            response = await client.post(f"{url}/webhook/demo?wait=false", json=body)
            if response.status_code in (200, 202):
                load.accepted.append(mid)
                load.progress.set()
                return
            assert response.status_code == 503, response.text
        except httpx.TransportError:
            pass
        load.retries += 1
        if load.url == url:  # not yet noticed as down by the killer: back off a moment
            await asyncio.sleep(0.02)


async def chat_sender(load: Load, client: httpx.AsyncClient, chat: int) -> None:
    for n in range(PER_CHAT):
        await send(load, client, chat, n)


def kill_points(rng: random.Random) -> list[int]:
    """Accepted-message counts at which to kill, at least ``MIN_GAP`` apart."""
    slack = CHATS * PER_CHAT - MIN_GAP * (KILLS + 1)
    cuts = sorted(rng.randrange(slack) for _ in range(KILLS))
    return [cut + MIN_GAP * (i + 1) for i, cut in enumerate(cuts)]


async def start(load: Load, running: tuple[subprocess.Popen[bytes], str]) -> None:
    proc, url = running
    began = time.monotonic()
    async with client_for(url) as probe:
        await wait_ready(proc, probe)
    load.starting_seconds += time.monotonic() - began
    load.gateway_at(url)


async def kill(load: Load, proc: subprocess.Popen[bytes]) -> None:
    load.gateway_at(None)
    proc.send_signal(signal.SIGKILL)
    await asyncio.to_thread(proc.wait, 30)


def stored(home: Path) -> tuple[dict[str, list[int]], dict[str, list[tuple[int, str]]]]:
    """Per message id: the ids of its user rows, and its replies (outbox id, text)."""
    users: dict[str, list[int]] = defaultdict(list)
    replies: dict[str, list[tuple[int, str]]] = defaultdict(list)
    with sqlite3.connect(home / "state.db") as conn:
        for row_id, mid in conn.execute(
            "SELECT id, platform_message_id FROM messages WHERE role = 'user'"
        ):
            users[mid].append(row_id)
        for out_id, mid, text in conn.execute(
            # A reply's text is its own or its assistant message's (migration 0019).
            "SELECT outbox.id, inbox.platform_message_id, "
            "COALESCE(outbox.text, messages.content) FROM outbox "
            "JOIN inbox ON inbox.id = outbox.inbox_id "
            "LEFT JOIN messages ON messages.id = outbox.message_id"
        ):
            replies[mid].append((out_id, text))
    return users, replies


def pending(home: Path) -> int:
    with sqlite3.connect(home / "state.db") as conn:
        return int(
            conn.execute("SELECT count(*) FROM inbox WHERE status = 'pending'").fetchone()[0]
        )


async def all_processed(home: Path, load: Load) -> None:
    deadline = time.monotonic() + 60
    while pending(home) or len(load.accepted) < CHATS * PER_CHAT:
        assert time.monotonic() < deadline, f"{pending(home)} messages still pending"
        await asyncio.sleep(0.1)  # noqa: ASYNC110 - another process's database


def tally(home: Path, accepted: list[str]) -> Counter[str]:
    users, replies = stored(home)
    counts: Counter[str] = Counter(accepted=len(set(accepted)))
    for mid in set(accepted):
        ok = len(users[mid]) == 1 and len(replies[mid]) == 1
        counts["answered"] += ok
        counts["lost"] += not users[mid] or not replies[mid]
        counts["duplicated"] += len(users[mid]) > 1 or len(replies[mid]) > 1
        counts["wrong reply"] += any(
            text != f"echo: n{mid.split('-m')[1]}" for _, text in replies[mid]
        )
    for chat in range(CHATS):
        ids = [message_id(chat, n) for n in range(PER_CHAT)]
        user_order = [min(users[m], default=0) for m in ids]
        reply_order = [min(replies[m], default=(0, ""))[0] for m in ids]
        counts["out of order"] += user_order != sorted(user_order) or reply_order != sorted(
            reply_order
        )
    return counts


async def test_kill9_under_load_loses_duplicates_and_reorders_nothing(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    seed = int(os.environ.get("CHATGATE_CHAOS_SEED") or random.randrange(2**32))
    print(f"chaos seed: {seed} (CHATGATE_CHAOS_SEED={seed} replays it)")
    points = kill_points(random.Random(seed))
    config = {"model": {"retry_base_seconds": 0.01}, "review": {"enabled": False}}
    write_yaml(home, yaml.safe_dump(config))
    env = fake_openai.gateway_env()
    load = Load()
    began = time.monotonic()
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with (
        asyncio.timeout(DEADLINE_SECONDS),
        httpx.AsyncClient(timeout=10, limits=limits) as client,
    ):
        senders = [asyncio.ensure_future(chat_sender(load, client, c)) for c in range(CHATS)]
        try:
            for point in points:
                with gateway_process(home, env) as running:
                    await start(load, running)
                    await load.until_accepted(point)
                    await kill(load, running[0])
            with gateway_process(home, env) as running:
                await start(load, running)
                await asyncio.gather(*senders)
                await all_processed(home, load)
                running[0].send_signal(signal.SIGTERM)
                assert await asyncio.to_thread(running[0].wait, 30) == 0
        finally:
            for task in senders:
                task.cancel()
    counts = tally(home, load.accepted)
    print(
        f"kills at accepted={points}; retries={load.retries}; "
        f"{time.monotonic() - began:.1f}s ({load.starting_seconds:.1f}s starting); "
        + ", ".join(f"{key}={value}" for key, value in counts.items())
    )

    assert counts["accepted"] == CHATS * PER_CHAT
    assert counts["answered"] == CHATS * PER_CHAT
    assert (counts["lost"], counts["duplicated"], counts["out of order"]) == (0, 0, 0)
    assert counts["wrong reply"] == 0
