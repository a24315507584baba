"""Resident memory and disk per idle chat: what ``chatgate run`` keeps after many chats
spoke once.

Starts the gateway (offline model, SQLite, a temporary home, ``--idle-worker-seconds``
so each chat's worker exits soon after its turn) and warms it with ``--warmup`` chats.
Once they are idle, each warm chat comes back for a second turn: its session,
transcript and review marks are read from ``state.db`` again, and the rate of those
turns is printed. Then it notes its resident memory (``VmRSS``) and the bytes
``state.db`` uses (pages in use, WAL included), and has ``--chats`` new chats send one
message each over ``--concurrency`` connections. Memory is read right after the last
reply and again once every chat's worker has exited and its transcript left memory
(``chatgate_active_sessions`` and ``chatgate_cached_sessions`` 0): the second figure,
minus the warm one, divided by the chats, is what an idle chat costs; likewise the
database's growth per session, with the tables that grew most. Last, with the gateway
stopped, the delivery queue is pruned as ``retention.queue_days`` will once the week has
passed (``SessionDB.prune_queue``), and what an idle session costs after that is printed
too: the pages the prune freed are shared out over every handled message, and an idle
session sent one.

    .venv/bin/python bench/idle_sessions.py [--chats 100000] [--concurrency 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the ``bench`` package importable
    sys.path.insert(0, str(ROOT))

from bench.loadgen import RawPoster, Target, check_reply  # noqa: E402
from bench.servers import HOST, ServerProcess, free_port  # noqa: E402
from bench.startup import rss_mib  # noqa: E402
from bench.throughput import gateway_argv, gateway_env, scrape  # noqa: E402
from core.store.db import SessionDB  # noqa: E402
from core.store.queue_retention import QueuePruned  # noqa: E402

LANES_TIMEOUT_SECONDS = 120.0


async def _one_chat_each(poster: RawPoster, target: Target, chats: range, turn: int) -> None:
    for chat in chats:
        message_id = f"idle-{chat}" if turn == 0 else f"idle-{chat}-{turn}"
        body = {"chat_id": f"idle-{chat}", "user_id": f"u{chat}", "text": "hello"}
        payload = json.dumps({**body, "message_id": message_id}).encode()
        status, answer = await poster.post(target.path, payload, {})
        check_reply(status, answer, message_id)


async def drive(target: Target, first: int, count: int, concurrency: int, turn: int = 0) -> float:
    """``count`` chats from ``first`` on, one turn each (their ``turn``-th, from 0);
    returns turns per second."""
    posters = [RawPoster(target.host, target.port) for _ in range(concurrency)]
    stop = first + count
    started = time.perf_counter()
    try:
        await asyncio.gather(
            *(
                _one_chat_each(p, target, range(first + i, stop, concurrency), turn)
                for i, p in enumerate(posters)
            )
        )
    finally:
        for poster in posters:
            await poster.aclose()
    return count / (time.perf_counter() - started)


# A build without the session cache's gauge reads as 0 (nothing to wait for).
_BUSY = ("chatgate_active_sessions", "chatgate_cached_sessions")


def wait_lanes_idle(url: str) -> float:
    """Seconds until no chat has a live worker or a transcript in memory (bounded poll
    of ``/metrics``)."""
    started = time.monotonic()
    while any(scrape(url).get(name, 0) > 0 for name in _BUSY):
        if time.monotonic() - started > LANES_TIMEOUT_SECONDS:
            raise RuntimeError("chat workers still alive")
        time.sleep(0.5)  # another process: no event to wait on
    return time.monotonic() - started


def db_bytes(db: Path) -> tuple[int, dict[str, int]]:
    """Bytes of ``db``'s pages in use (its WAL included), and per table where SQLite's
    ``dbstat`` is built in."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        try:
            tables = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
        except sqlite3.OperationalError:
            tables = {}
    return (pages - free) * size, tables


async def prune_queue(db_file: Path) -> QueuePruned:
    """Delete every handled message and sent reply, as retention will after a week."""
    async with SessionDB(f"sqlite:///{db_file}") as db:
        return await db.prune_queue(time.time() + 1)


def run(home: Path, args: argparse.Namespace) -> None:
    config = f"sessions:\n  idle_worker_seconds: {args.idle_worker_seconds}\n"
    (home / "config.yaml").write_text(config, encoding="utf-8")
    port = free_port()
    server = ServerProcess(
        "gateway",
        gateway_argv(args),
        port=port,
        log_path=home / "gateway.log",
        env=gateway_env(home, port),
        cwd=ROOT,
    )
    target = Target("gateway", HOST, port)
    with server:
        pid = server.pid
        assert pid is not None
        asyncio.run(drive(target, 0, args.warmup, args.concurrency))
        wait_lanes_idle(server.url)
        back = asyncio.run(drive(target, 0, args.warmup, args.concurrency, turn=1))
        wait_lanes_idle(server.url)
        warm = rss_mib(pid)
        warm_db, warm_tables = db_bytes(home / "state.db")
        rate = asyncio.run(drive(target, args.warmup, args.chats, args.concurrency))
        loaded = rss_mib(pid)
        waited = wait_lanes_idle(server.url)
        idle = rss_mib(pid)
        idle_db, idle_tables = db_bytes(home / "state.db")
    started = time.perf_counter()
    pruned = asyncio.run(prune_queue(home / "state.db"))
    pruning = time.perf_counter() - started
    pruned_db, _ = db_bytes(home / "state.db")
    per_chat = (idle - warm) * 1024 * 1024 / args.chats
    print(f"{args.chats} chats, one turn each, at {rate:.0f} turns/s ({args.concurrency} at once)")
    print(f"{args.warmup} idle chats back for a second turn at {back:.0f} turns/s")
    print(f"RSS warm ({args.warmup} chats):       {warm:8.1f} MiB")
    print(f"RSS after the last reply:      {loaded:8.1f} MiB")
    print(f"RSS with every worker exited:  {idle:8.1f} MiB (after {waited:.0f} s)")
    print(f"per idle chat:                 {per_chat:8.0f} bytes")
    per_session = (idle_db - warm_db) / args.chats
    freed = (idle_db - pruned_db) / max(pruned.messages, 1)  # one message a session
    print(f"state.db per idle session:     {per_session:8.0f} bytes")
    print(
        f"  once the queue is pruned:      {per_session - freed:8.0f} bytes "
        f"({pruned.messages} handled messages, {pruned.replies} replies deleted "
        f"in {pruning:.1f} s)"
    )
    grown = {t: (n - warm_tables.get(t, 0)) / args.chats for t, n in idle_tables.items()}
    for table, per in sorted(grown.items(), key=lambda kv: -kv[1])[:24]:
        print(f"  {table:32} {per:8.0f} bytes a session")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=100_000)
    parser.add_argument("--warmup", type=int, default=1_000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--idle-worker-seconds", type=int, default=5)
    parser.add_argument("--profile-out", type=Path, help="run the gateway under cProfile")
    args = parser.parse_args(argv)
    args.wrap = ""  # what ``gateway_argv`` reads, beside ``profile_out``
    with tempfile.TemporaryDirectory(prefix="chatgate-idle-") as name:
        run(Path(name), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
