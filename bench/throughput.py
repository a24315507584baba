"""Durable turns per second through the webhook, against a bare FastAPI ceiling.

Starts the real gateway (``chatgate run``, offline model, a temporary
``CHATGATE_HOME``) on a free 127.0.0.1 port, sends N messages over C concurrent
chats, then sends the same load to ``bench/bare_app.py`` (one pydantic-validated
POST endpoint under the same uvicorn settings). Prints msgs/s and p50/p99 for
both, their ratio, the SessionDB commits the gateway made (group commit at work)
and the rows it left in ``state.db`` (every message really written).

    .venv/bin/python bench/throughput.py [--messages N] [--chats C] [--warmup W]

``--rounds K`` repeats the comparison K times, each round with a fresh gateway and bare
app and the order swapped every round, and prints the median ratio: on a shared machine
one pair moves 15–30 %. ``--rate R`` paces the measured phase at R msgs/s offered
(latency at a given load rather than at saturation). ``--client httpx`` uses httpx
instead of the raw keep-alive client (httpx is itself the bottleneck: ~500 msgs/s on
this machine).
For finding the hot path: ``--profile-out FILE`` runs the gateway under cProfile,
``--wrap 'py-spy record ... --'`` prefixes its command (see ``bench.stack_summary``)
and the bare app's alike, so use it with ``--only`` (``bench.instructions`` does).

Loopback only; every loop is bounded; servers are stopped on exit and on CTRL-C.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shlex
import signal
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the ``bench`` package importable
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.loadgen import ClientKind, LoadError, LoadResult, Target, run_load  # noqa: E402
from bench.servers import (  # noqa: E402
    HOST,
    ServerError,
    ServerProcess,
    add_settings_option,
    free_port,
    settings_env,
)

T = TypeVar("T")
Runner = Callable[[Coroutine[Any, Any, T]], T]
GOAL_RATIO = 0.35
GOAL_ADDED_P50_MS = 5.0
STRIPPED_ENV = ("CHATGATE_", "OPENAI_", "ANTHROPIC_")


@dataclass(frozen=True, slots=True)
class Measured:
    """One target's measured phase: the load result and CPU seconds on each side."""

    load: LoadResult
    server_cpu: float
    client_cpu: float
    # Of ``server_cpu``, the main thread's (the event loop); the rest is other threads
    # (the gateway's SessionDB writer, WAL checkpoints, the resolver's).
    loop_cpu: float = 0.0

    def cpu_ms_per_message(self) -> float:
        """Server CPU per message: unlike msgs/s, not inflated by other load on the
        machine."""
        return 1000.0 * self.server_cpu / self.load.sent if self.load.sent else 0.0

    def cpu_percent(self, seconds: float) -> float:
        return 100.0 * seconds / self.load.seconds if self.load.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class GatewayFacts:
    commits: int
    turns: int
    rows: dict[str, int]
    log_tail: str


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="chatgate webhook throughput vs a bare app")
    parser.add_argument("--messages", type=int, default=5000, help="measured messages (N)")
    parser.add_argument("--chats", type=int, default=50, help="concurrent chats (C)")
    parser.add_argument("--warmup", type=int, default=500, help="unmeasured messages first")
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="offered msgs/s over all chats for the measured phase (default 0: closed loop)",
    )
    parser.add_argument("--client", choices=["raw", "httpx"], default="raw")
    parser.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop")
    parser.add_argument("--only", choices=["both", "gateway", "bare"], default="both")
    parser.add_argument(
        "--profile-out", type=Path, help="run the gateway under cProfile, stats to this file"
    )
    parser.add_argument(
        "--wrap",
        default="",
        help="command to prefix each server with, e.g. 'py-spy record ... --' (with --only)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="repeat the whole comparison, each round a fresh gateway and bare app, the "
        "order swapped every round; prints each round and the median ratio",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary CHATGATE_HOME")
    add_settings_option(parser)
    parser.add_argument(
        "--secret", help="run the gateway with this webhook secret and sign every request"
    )
    args = parser.parse_args(argv)
    if args.messages < 1 or args.chats < 1 or args.warmup < 0 or args.rounds < 1:
        parser.error("--messages, --chats and --rounds must be >= 1, --warmup >= 0")
    return args


def gateway_env(home: Path, port: int, secret: str | None = None) -> dict[str, str]:
    """This environment without model or chatgate settings, plus the bench's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(STRIPPED_ENV)}
    env.update(
        CHATGATE_HOME=str(home),
        CHATGATE_HOST=HOST,
        CHATGATE_PORT=str(port),
        CHATGATE_LOG_LEVEL="warning",
    )
    if secret:
        env["CHATGATE_WEBHOOK_SECRET"] = secret
    return env


def gateway_argv(args: argparse.Namespace) -> list[str]:
    prefix = shlex.split(args.wrap)
    if args.profile_out is not None:
        module = [sys.executable, "-m", "bench.profile_gateway", "--out", str(args.profile_out)]
        return prefix + module
    script = Path(sys.executable).parent / "chatgate"
    if script.exists():
        return [*prefix, str(script), "run"]
    return [*prefix, sys.executable, "-m", "gateway.cli", "run"]


def measure(server: ServerProcess, run: Runner[LoadResult], args: argparse.Namespace) -> Measured:
    """Warm up, then run the measured load, noting CPU used on both sides."""
    # The bare app checks no signature: it is the ceiling without one.
    secret = args.secret if server.name == "gateway" else None
    target = Target(server.name, HOST, server.port, secret=secret)
    kind: ClientKind = args.client
    if args.warmup:
        run(run_load(target, kind, messages=args.warmup, chats=args.chats, phase="warm"))
    server_before, client_before = server.cpu_seconds(), time.process_time()
    loop_before = server.loop_cpu_seconds()
    load = run(
        run_load(
            target, kind, messages=args.messages, chats=args.chats, phase="run", rate=args.rate
        )
    )
    return Measured(
        load,
        server.cpu_seconds() - server_before,
        time.process_time() - client_before,
        server.loop_cpu_seconds() - loop_before,
    )


def scrape(url: str) -> dict[str, float]:
    """``GET /metrics`` as {name{labels}: value} (comments dropped)."""
    text = httpx.get(url + "/metrics", timeout=10.0, trust_env=False).text
    values: dict[str, float] = {}
    for line in text.splitlines():
        match = re.fullmatch(r"([a-zA-Z_:][\w:]*(?:\{[^}]*\})?) (\S+)", line)
        if match:
            values[match[1]] = float(match[2])
    return values


def count_rows(db_path: Path) -> dict[str, int]:
    queries = {
        "inbox": "SELECT count(*) FROM inbox",
        "inbox done": "SELECT count(*) FROM inbox WHERE status = 'done'",
        "messages": "SELECT count(*) FROM messages",
        "outbox": "SELECT count(*) FROM outbox",
        "outbox delivered": "SELECT count(*) FROM outbox WHERE status = 'delivered'",
        "sessions": "SELECT count(*) FROM sessions",
    }
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return {name: int(conn.execute(sql).fetchone()[0]) for name, sql in queries.items()}
    finally:
        conn.close()


def bench_gateway(
    home: Path, run: Runner[LoadResult], args: argparse.Namespace
) -> tuple[Measured, GatewayFacts]:
    port = free_port()
    server = ServerProcess(
        "gateway",
        gateway_argv(args),
        port=port,
        log_path=home / "gateway.log",
        env={**gateway_env(home, port, args.secret), **settings_env(args)},
        cwd=ROOT,
    )
    with server:
        warm_and_run = measure(server, run, args)
        metrics = scrape(server.url)
    commits = int(metrics.get("chatgate_db_commits_total", 0))
    done = [v for k, v in metrics.items() if k.startswith("chatgate_turns_total{") and "done" in k]
    turns = int(sum(done))
    facts = GatewayFacts(commits, turns, count_rows(home / "state.db"), server.log_tail(3))
    return warm_and_run, facts


def bench_bare(home: Path, run: Runner[LoadResult], args: argparse.Namespace) -> Measured:
    port = free_port()
    server = ServerProcess(
        "bare",
        [*shlex.split(args.wrap), sys.executable, "-m", "bench.bare_app", "--port", str(port)],
        port=port,
        log_path=home / "bare.log",
        env=dict(os.environ),
        cwd=ROOT,
    )
    with server:
        return measure(server, run, args)


def report(
    args: argparse.Namespace,
    gateway: tuple[Measured, GatewayFacts] | None,
    bare: Measured | None,
) -> None:
    print(
        f"\n{args.messages} messages over {args.chats} concurrent chats "
        f"(+{args.warmup} warm-up), client {args.client} on {args.loop}, {os.cpu_count()} CPUs"
    )
    pace = f"paced at {args.rate:.0f} msgs/s offered" if args.rate else "closed loop"
    pace += ", signed requests" if args.secret else ", unsigned requests"
    print(f"{pace}; srv cpu/cli cpu: CPU time used during the run, 100% = one core")
    print(
        f"{'target':<8} {'msgs/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'srv cpu':>8} {'cli cpu':>8} "
        f"{'srv ms/msg':>10}"
    )
    rows = [m for m in (gateway[0] if gateway else None, bare) if m is not None]
    for m in rows:
        print(
            f"{m.load.target:<8} {m.load.per_second:>9.0f} {m.load.percentile_ms(0.5):>8.2f} "
            f"{m.load.percentile_ms(0.99):>8.2f} {m.cpu_percent(m.server_cpu):>7.0f}% "
            f"{m.cpu_percent(m.client_cpu):>7.0f}% {m.cpu_ms_per_message():>10.3f}"
        )
    if gateway is not None and bare is not None:
        report_comparison(gateway[0], bare)
    if gateway is not None:
        report_threads(gateway[0])
        report_gateway(args, gateway[1])


def msgs_ratio(gateway: Measured, bare: Measured) -> float:
    """The gateway's messages per second over the bare app's: the throughput goal."""
    return gateway.load.per_second / bare.load.per_second


def report_comparison(measured: Measured, bare_measured: Measured) -> None:
    gateway, bare = measured.load, bare_measured.load
    ratio = msgs_ratio(measured, bare_measured)
    added = gateway.percentile_ms(0.5) - bare.percentile_ms(0.5)
    print(f"ratio gateway/bare msgs/s: {ratio:.3f}  (goal >= {GOAL_RATIO})")
    gateway_cpu = measured.cpu_ms_per_message()
    if gateway_cpu > 0:
        cpu_ratio = bare_measured.cpu_ms_per_message() / gateway_cpu
        print(f"ratio bare/gateway CPU per message: {cpu_ratio:.3f}  (the same on a busy machine)")
    print(f"p50 added latency: {added:.2f} ms  (goal < {GOAL_ADDED_P50_MS:.0f} ms)")


def report_threads(measured: Measured) -> None:
    """Where the gateway's CPU went: its threads share one GIL, so their sum is what
    bounds it on one core."""
    sent = measured.load.sent
    if not sent:
        return
    loop = 1000.0 * measured.loop_cpu / sent
    rest = 1000.0 * (measured.server_cpu - measured.loop_cpu) / sent
    print(
        f"gateway CPU per message by thread: event loop {loop:.3f} ms, "
        f"other threads (SessionDB writer, checkpoints) {rest:.3f} ms"
    )


def report_gateway(args: argparse.Namespace, facts: GatewayFacts) -> None:
    total = args.messages + args.warmup
    per_commit = 2 * facts.turns / facts.commits if facts.commits else 0.0
    print(
        f"SessionDB commits: {facts.commits} for {facts.turns} turns "
        f"(~{per_commit:.1f} writes per commit; a turn is 2 writes: accept + finish)"
    )
    rows = ", ".join(f"{name} {count}" for name, count in facts.rows.items())
    print(f"state.db rows: {rows}")
    expected = {"inbox done": total, "messages": 2 * total, "outbox": total}
    missing = {k: v for k, v in expected.items() if facts.rows.get(k) != v}
    print("every message durable: " + ("yes" if not missing else f"NO, expected {missing}"))


@contextmanager
def bench_home(keep: bool) -> Iterator[Path]:
    if keep:
        home = Path(tempfile.mkdtemp(prefix="chatgate-bench-"))
        print(f"CHATGATE_HOME kept at {home}")
        yield home
        return
    with tempfile.TemporaryDirectory(prefix="chatgate-bench-") as name:
        yield Path(name)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # unwinds the servers' context managers


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started ignoring it
    ratios: list[float] = []
    try:
        with asyncio.Runner(loop_factory=loop_factory(args.loop)) as runner:
            for number in range(args.rounds):
                if args.rounds > 1:
                    print(f"\n== round {number + 1} of {args.rounds}")
                gateway, bare = one_round(runner.run, args, swapped=number % 2 == 1)
                report(args, gateway, bare)
                if gateway is not None and bare is not None:
                    ratios.append(msgs_ratio(gateway[0], bare))
    except (LoadError, ServerError) as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; servers stopped", file=sys.stderr)
        return 130
    if len(ratios) > 1:
        shown = ", ".join(f"{r:.3f}" for r in ratios)
        print(
            f"\nratio gateway/bare msgs/s by round: {shown}; "
            f"median {statistics.median(ratios):.3f}  (goal >= {GOAL_RATIO})"
        )
    return 0


def one_round(
    run: Runner[LoadResult], args: argparse.Namespace, *, swapped: bool
) -> tuple[tuple[Measured, GatewayFacts] | None, Measured | None]:
    """The gateway (in a fresh home) and the bare app, one after the other: the bare app
    first when ``swapped``, so that over rounds neither always runs first."""
    gateway: tuple[Measured, GatewayFacts] | None = None
    bare: Measured | None = None
    with bench_home(args.keep) as home:
        if swapped and args.only in ("both", "bare"):
            bare = bench_bare(home, run, args)
        if args.only in ("both", "gateway"):
            gateway = bench_gateway(home, run, args)
        if not swapped and args.only in ("both", "bare"):
            bare = bench_bare(home, run, args)
    return gateway, bare


if __name__ == "__main__":
    sys.exit(main())
