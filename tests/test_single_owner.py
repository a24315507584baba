"""One ``chatgate run`` owns a database: a second is refused in one line, a crashed or
stopped holder's lease is free again, simultaneous starts neither crash nor race their
migrations, and a PostgreSQL gateway that loses its lease stops.

Real ``chatgate`` subprocesses, on SQLite under the test's home and on a throwaway
PostgreSQL database (``tests/postgres.py``).
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]

from migrations.runner import head_revision
from tests.fakes.loopback import free_port
from tests.postgres import PG_ADMIN, postgres_database
from tests.test_cli import (
    CHATGATE,
    chatgate,
    cli_env,
    client_for,
    gateway_process,
    run_log,
    wait_ready,
    write_yaml,
)

REFUSAL = "another chatgate gateway (pid {pid} on "
Popen = subprocess.Popen[bytes]


def refusal_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused ``chatgate run`` prints (and nothing else of note)."""
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    return line


def run_once(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A ``chatgate run`` that is expected to stop by itself."""
    return chatgate("run", env=cli_env(CHATGATE_PORT=str(free_port()), **env))


async def test_a_second_run_on_the_same_database_is_refused_in_one_line(
    home: Path, database_env: dict[str, str]
) -> None:
    with gateway_process(home, database_env) as (holder, url):
        async with client_for(url) as client:
            await wait_ready(holder, client)
            second = run_once(database_env)
            still_ready = await client.get("/readyz")

    line = refusal_line(second)
    assert line.startswith("chatgate: " + REFUSAL.format(pid=holder.pid)), line
    where = database_env.get("CHATGATE_DATABASE_URL", "state.db").rsplit("/", 1)[-1]
    assert where in line
    assert "replicas" in line
    assert still_ready.status_code == 200


async def test_the_lease_is_free_after_kill_9_and_after_a_graceful_stop(
    home: Path, database_env: dict[str, str]
) -> None:
    with gateway_process(home, database_env) as (first, url):
        async with client_for(url) as client:
            await wait_ready(first, client)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    with gateway_process(home, database_env) as (after_crash, url):
        async with client_for(url) as client:
            await wait_ready(after_crash, client)
            answered = await client.post(
                "/webhook/demo", json={"chat_id": "c1", "user_id": "u1", "text": "hello"}
            )
        after_crash.send_signal(signal.SIGTERM)
        stopped = after_crash.wait(timeout=30)
    with gateway_process(home, database_env) as (after_stop, url):
        async with client_for(url) as client:
            await wait_ready(after_stop, client)  # asserts it did not exit refused

    assert answered.status_code == 200, answered.text
    assert stopped == 0


@contextmanager
def simultaneous_runs(home: Path, env: dict[str, str], count: int) -> Iterator[list[Popen]]:
    """``count`` ``chatgate run`` started at once, each with its stderr in a file."""
    with ExitStack() as stack:
        procs = []
        for n in range(count):
            log = stack.enter_context((home / f"start-{n}.log").open("wb"))
            proc = subprocess.Popen(
                [str(CHATGATE), "run"],
                env=cli_env(CHATGATE_PORT=str(free_port()), **env),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            stack.callback(_ended, proc)
            procs.append(proc)
        yield procs


def _ended(proc: Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)


async def wait_for_exits(procs: list[Popen], count: int) -> list[Popen]:
    """Wait (bounded) until ``count`` of ``procs`` have exited; those still running."""
    deadline = time.monotonic() + 60
    while sum(p.poll() is not None for p in procs) < count:
        assert time.monotonic() < deadline, "the refused starts did not exit"
        await asyncio.sleep(0.05)  # bounded poll: other processes give no event
    return [p for p in procs if p.poll() is None]


async def test_six_simultaneous_starts_one_runs_the_others_refuse(
    home: Path, database_env: dict[str, str]
) -> None:
    with simultaneous_runs(home, database_env, 6) as procs:
        [running] = await wait_for_exits(procs, 5)
        refused = [p for p in procs if p is not running]
        codes = [p.returncode for p in refused]
        logs = {p.pid: (home / f"start-{procs.index(p)}.log").read_text() for p in procs}
        running.send_signal(signal.SIGTERM)
        running.wait(timeout=30)

    assert codes == [1] * 5
    for proc in refused:
        [line] = [line for line in logs[proc.pid].splitlines() if line.strip()]
        assert line.startswith("chatgate: another chatgate gateway (pid "), line
        assert f"(pid {running.pid} on " in line, line
    assert not any("Traceback" in log for log in logs.values())


async def test_simultaneous_upgrades_of_a_fresh_postgresql_database_do_not_race(
    home: Path,
) -> None:
    async with postgres_database() as url:
        env = cli_env(CHATGATE_DATABASE_URL=url)
        outcomes = simultaneous_upgrades(env, 6)
        current = chatgate("db", "current", env=env)

    assert [code for code, _ in outcomes] == [0] * 6, [err for _, err in outcomes]
    assert f"database: {head_revision()}" in current.stdout


def simultaneous_upgrades(env: dict[str, str], count: int) -> list[tuple[int, str]]:
    """``count`` ``chatgate db upgrade`` started at once: each one's exit code and stderr."""
    procs = [
        subprocess.Popen(
            [str(CHATGATE), "db", "upgrade"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    return [(p.wait(timeout=60), p.stderr.read() if p.stderr else "") for p in procs]


async def test_a_postgresql_gateway_that_loses_its_lease_stops(home: Path) -> None:
    write_yaml(home, "database:\n  lease_check_seconds: 0.2\n")
    async with postgres_database() as url:
        with gateway_process(home, {"CHATGATE_DATABASE_URL": url}) as (proc, base_url):
            async with client_for(base_url) as client:
                await wait_ready(proc, client)
            cut = await terminate_lease_connection(proc.pid)
            code = await asyncio.to_thread(proc.wait, 30)
        log = run_log(home)

    assert cut == 1
    assert code == 1  # not a stop anyone asked for: a supervisor should restart it
    assert "lost the lease on the SessionDB at postgresql://" in log
    assert "Traceback" not in log


async def terminate_lease_connection(pid: int) -> int:
    """End the server session that holds ``pid``'s lease, as a failover or a network
    cut would; how many sessions were ended."""
    admin = await asyncpg.connect(PG_ADMIN)
    try:
        rows = await admin.fetch(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            f"chatgate pid {pid} on {socket.gethostname()}"[:63],
        )
    finally:
        await admin.close()
    return len(rows)
