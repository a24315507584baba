"""Stranded turns: a store that cannot write for a while strands no accepted message.

The real gateway over HTTP (webhook adapter, fake model server), on SQLite whose disk
really fills (a small tmpfs) or whose write lock another connection really holds. Every
accepted message is answered exactly once after the fault clears, with no restart;
``/readyz`` names the cause meanwhile; no request waits out busy timeouts in a row.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest
import yaml
from sqlalchemy import func, select

from core.errors import ConfigError
from core.store.schema import inbox, messages, outbox
from core.turn_commit import NOT_ANSWERED
from gateway.config import load_settings
from tests.direct_sql import read_rows
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway
from tests.postgres import PG_ADMIN, postgres_database

Json = dict[str, Any]
IN_FLIGHT = 20


def write_config(home: Path, db_path: Path, **recovery: float) -> None:
    config: Json = {
        "model": {"retry_base_seconds": 0.01, "retry_max_seconds": 0.05, "timeout_seconds": 30},
        "database": {"url": f"sqlite:///{db_path}", "busy_timeout_ms": 1000},
        "recovery": {"probe_max_seconds": 0.2, **recovery},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


async def until(condition: Callable[[], bool], *, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


async def readiness(gw: RunningGateway, status: int, *, seconds: float = 15.0) -> Json:
    """Poll ``/readyz`` (bounded) until it answers ``status``; return its body."""
    deadline = time.monotonic() + seconds
    while True:
        response = await gw.client.get("/readyz")
        if response.status_code == status:
            body: Json = response.json()
            return body
        assert time.monotonic() < deadline, f"/readyz stayed {response.status_code}"
        await asyncio.sleep(0.02)


def send_all(gw: RunningGateway, count: int, prefix: str) -> list[asyncio.Task[httpx.Response]]:
    """``count`` chats each send one message and wait for its reply (real HTTP)."""
    return [
        asyncio.ensure_future(
            gw.say(f"{prefix} {n}", chat_id=f"{prefix}{n}", message_id=f"{prefix}-{n}")
        )
        for n in range(count)
    ]


async def models_hold(fake: FakeOpenAIServer, count: int) -> asyncio.Event:
    """The next ``count`` model requests wait for the returned event."""
    release = asyncio.Event()
    for _ in range(count):
        fake.block(release)
    return release


async def answered_once(gw: RunningGateway, tasks: list[asyncio.Task[httpx.Response]]) -> None:
    """Every waiting request got 200 with exactly one reply, and the store holds one user
    row and one reply per message."""
    async with asyncio.timeout(30):
        responses = await asyncio.gather(*tasks)
    for response in responses:
        assert response.status_code == 200, response.text
        assert [r["text"].startswith("echo: ") for r in response.json()["replies"]] == [True]
    url = gw.settings.database_url
    rows = await read_rows(url, select(inbox.c.id, inbox.c.status))
    assert sorted(row.status for row in rows) == ["done"] * len(tasks)
    users = select(func.count()).select_from(messages).where(messages.c.role == "user")
    assert (await read_rows(url, users))[0][0] == len(tasks)
    replies = select(func.count().label("n")).select_from(outbox).group_by(outbox.c.inbox_id)
    assert sorted(row.n for row in await read_rows(url, replies)) == [1] * len(tasks)


# -- a disk that really fills ---------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MB tmpfs (needs the right to mount; skipped elsewhere)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip("mounting a tmpfs is not permitted here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Write a file until the disk has no byte left; return it (delete it to free)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    with pytest.raises(OSError, match="No space left") as full:
        (disk / "probe").write_bytes(b"\0" * 4096)
    assert full.value.errno == errno.ENOSPC
    return filler


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


async def test_turns_in_flight_on_a_full_disk_are_answered_once_it_has_room(
    home: Path, fake_openai: FakeOpenAIServer, small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_config(home, small_disk / "state.db")
    caplog.set_level(logging.WARNING)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        release = await models_hold(fake_openai, IN_FLIGHT)
        tasks = send_all(gw, IN_FLIGHT, "disk")
        await until(lambda: len(fake_openai.requests) == IN_FLIGHT)
        filler = fill(small_disk)
        release.set()
        body = await readiness(gw, 503)
        assert (body["cause"], body["path"]) == ("disk_full", str(small_disk))
        assert not any(task.done() for task in tasks)  # none answered, none given up
        filler.unlink()
        freed = time.monotonic()
        await answered_once(gw, tasks)
        print(f"\nfull disk freed -> {IN_FLIGHT} answered in {time.monotonic() - freed:.2f} s")
        assert (await readiness(gw, 200))["status"] == "ready"
        assert len(fake_openai.requests) == IN_FLIGHT  # the model was not asked twice
    # The cause is logged once when it starts and once when it clears, never per turn.
    logged = warnings(caplog)
    assert [m for m in logged if "SessionDB" in m] == [
        f"the SessionDB cannot write (disk full at {small_disk}: database or disk is full); "
        "writes fail fast until it can",
        "the SessionDB can write again (it was: disk full)",
    ]
    assert not [m for m in logged if "crashed" in m]


# -- a write lock held by another connection ------------------------------------------


@contextlib.contextmanager
def write_lock(path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection holding the database's write lock until the block ends."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=10)
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield conn
        conn.execute("ROLLBACK")
    finally:
        conn.close()


async def timed(call: asyncio.Future[httpx.Response]) -> tuple[int, float]:
    started = time.monotonic()
    response = await call
    return response.status_code, time.monotonic() - started


async def test_a_held_write_lock_answers_503_fast_and_strands_nothing(
    home: Path, fake_openai: FakeOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "state.db"
    write_config(home, db)
    caplog.set_level(logging.WARNING)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        release = await models_hold(fake_openai, 5)
        in_flight = send_all(gw, 5, "held")
        await until(lambda: len(fake_openai.requests) == 5)
        with write_lock(db):
            release.set()
            newcomers = await asyncio.gather(*(timed(t) for t in send_all(gw, IN_FLIGHT, "new")))
            body = await readiness(gw, 503)
            assert body["cause"] == "locked"
            assert "chatgate_store_writable 0.0" in (await gw.client.get("/metrics")).text
            assert not any(task.done() for task in in_flight)
        freed = time.monotonic()
        await answered_once(gw, in_flight)
        print(f"\nlock released -> 5 answered in {time.monotonic() - freed:.2f} s")
        print(f"waits under the lock: max {max(wait for _, wait in newcomers):.2f} s")
        assert (await readiness(gw, 200))["status"] == "ready"
    assert {status for status, _ in newcomers} == {503}
    logged = warnings(caplog)
    assert [m for m in logged if "cannot write" in m] == [
        f"the SessionDB cannot write (database locked at {db}: database is locked); "
        "writes fail fast until it can"
    ]
    assert not [m for m in logged if "webhook request refused" in m]  # not per request
    busy_timeout = 1.0
    assert max(wait for _, wait in newcomers) < busy_timeout + 1.0


async def test_a_message_older_than_max_age_gets_one_notice_and_is_failed(
    home: Path, fake_openai: FakeOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "state.db"
    write_config(home, db, max_age=1.0)
    caplog.set_level(logging.WARNING)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        release = await models_hold(fake_openai, 1)
        [waiting] = send_all(gw, 1, "old")
        await until(lambda: len(fake_openai.requests) == 1)
        with write_lock(db):
            release.set()
            await until(lambda: "not answered" in caplog.text)
        async with asyncio.timeout(30):
            response = await waiting
        assert [r["text"] for r in response.json()["replies"]] == [NOT_ANSWERED]
        url = gw.settings.database_url
        assert [r.status for r in await read_rows(url, select(inbox.c.status))] == ["failed"]
        assert len(await read_rows(url, select(outbox.c.id))) == 1
        assert await read_rows(url, select(messages.c.id)) == []  # nothing of the turn
        assert (await readiness(gw, 200))["status"] == "ready"
        assert len(fake_openai.requests) == 1


# -- a PostgreSQL database turned read-only -------------------------------------------


async def read_only(url: str, *, on: bool) -> None:
    """Make the database refuse writes (or accept them again), for new connections, and
    cut the gateway's current ones so it reconnects into the new setting."""
    name = url.rsplit("/", 1)[1]
    admin = await asyncpg.connect(PG_ADMIN)
    try:
        setting = "SET default_transaction_read_only = on" if on else "RESET ALL"
        await admin.execute(f'ALTER DATABASE "{name}" {setting}')
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = $1 AND pid <> pg_backend_pid()",
            name,
        )
    finally:
        await admin.close()


async def test_turns_on_a_read_only_postgres_are_answered_once_it_writes(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with postgres_database() as url:
        config = {"recovery": {"probe_max_seconds": 0.2}}
        (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        env = fake_openai.gateway_env(CHATGATE_DATABASE_URL=url)
        async with running_gateway(home, env) as gw:
            release = await models_hold(fake_openai, 5)
            tasks = send_all(gw, 5, "pg")
            await until(lambda: len(fake_openai.requests) == 5)
            await read_only(url, on=True)
            release.set()
            await until_cause(gw, "read_only")
            assert not any(task.done() for task in tasks)
            await read_only(url, on=False)
            await answered_once(gw, tasks)
            assert (await readiness(gw, 200))["status"] == "ready"


async def until_cause(gw: RunningGateway, cause: str) -> None:
    """Poll ``/readyz`` (bounded) until its 503 names ``cause``."""
    deadline = time.monotonic() + 15
    while (await gw.client.get("/readyz")).json().get("cause") != cause:
        assert time.monotonic() < deadline, f"/readyz never named {cause}"
        await asyncio.sleep(0.02)


def test_recovery_settings_come_from_the_file_and_the_environment(tmp_path: Path) -> None:
    assert load_settings(tmp_path, {}).recovery.max_age == 3600
    (tmp_path / "config.yaml").write_text("recovery:\n  probe_max_seconds: 2\n", encoding="utf-8")
    env = {"CHATGATE_RECOVERY__MAX_AGE": "60"}
    recovery = load_settings(tmp_path, env).recovery
    assert (recovery.max_age, recovery.probe_max_seconds) == (60, 2)
    with pytest.raises(ConfigError, match="recovery.max_age"):
        load_settings(tmp_path, {"CHATGATE_RECOVERY__MAX_AGE": "0"})
