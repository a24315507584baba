"""Latency the gateway adds when chats arrive at a person's pace, not at saturation.

``--chats`` chats (default 200) each send messages as a Poisson process, together
``--rate`` messages a second (default 80) over the webhook, for ``--seconds``. The
load is open: a message is sent at its time whether or not the chat's previous one
was answered (each in-flight request has its own keep-alive connection from a pool),
so a stall in the gateway shows as the queue behind it, as people would feel it.

The gateway runs as ``chatgate run`` with the OpenAI-compatible client against
``bench/fake_model.py`` (every answer in one write, ``TCP_NODELAY``), once with an
instant model and once answering after ``--model-ms`` (default 50). Printed per model:
the added latency (end to end minus the model's fixed delay) at p50, p90, p99 and max,
the gateway's CPU, and whether every message was written. A second line ("own turn")
counts from when the gateway could start the message's turn: a message sent while its
chat's previous one is still being answered waits for that turn first (one turn at a
time per chat, by design), which with a 50 ms model is about 2 % of messages at 0.4
messages a second per chat; that wait is the model's time, not the gateway's.

    .venv/bin/python bench/pace.py [--chats 200] [--rate 80] [--seconds 30]

Loopback only; bounded in time; servers are stopped on exit and on CTRL-C.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the ``bench`` package importable
    sys.path.insert(0, str(ROOT))

from bench.loadgen import REQUEST_TIMEOUT_SECONDS, RawPoster, check_reply, message_body  # noqa: E402
from bench.servers import HOST, ServerError, ServerProcess, free_port  # noqa: E402
from bench.throughput import count_rows, gateway_env, loop_factory  # noqa: E402

GOAL_P50_MS = 5.0
GOAL_P99_MS = 25.0
WARMUP_SECONDS = 3.0
PATH = "/webhook/bench"


@dataclass(slots=True)
class Paced:
    """The measured phase: each request's latency and the gateway's CPU."""

    latencies: list[float] = field(default_factory=list)
    # From when the gateway could start the turn (sent, or the chat's previous reply
    # if that came later: one turn at a time per chat) to the reply.
    own: list[float] = field(default_factory=list)
    queued: int = 0  # messages that waited for their chat's previous reply
    sent: int = 0
    seconds: float = 0.0
    gateway_cpu: float = 0.0

    def added_ms(self, fraction: float, model_seconds: float, own: bool = False) -> float:
        ordered = sorted(self.own if own else self.latencies)
        index = min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))
        return (ordered[index] - model_seconds) * 1000.0


class Pool:
    """Keep-alive connections to the gateway, one per request in flight."""

    def __init__(self, port: int) -> None:
        self._port = port
        self._idle: list[RawPoster] = []
        self._all: list[RawPoster] = []

    async def post(self, body: bytes) -> tuple[int, bytes]:
        if self._idle:
            poster = self._idle.pop()
            try:
                return await self._post_on(poster, body)
            except (asyncio.IncompleteReadError, ConnectionError):
                pass  # the server closed it while idle (its keep-alive timeout): anew
        return await self._post_on(self._new(), body)

    async def _post_on(self, poster: RawPoster, body: bytes) -> tuple[int, bytes]:
        try:
            result = await poster.post(PATH, body, {})
        except BaseException:
            await poster.aclose()
            raise
        self._idle.append(poster)
        return result

    def _new(self) -> RawPoster:
        poster = RawPoster(HOST, self._port)
        self._all.append(poster)
        return poster

    async def aclose(self) -> None:
        for poster in self._all:
            await poster.aclose()


async def _one(
    pool: Pool, phase: str, chat: int, seq: int, into: Paced | None, answered: list[float]
) -> None:
    message_id, body = message_body(phase, chat, seq)
    sent = time.perf_counter()
    async with asyncio.timeout(REQUEST_TIMEOUT_SECONDS):
        status, payload = await pool.post(body)
    done = time.perf_counter()
    # A chat's replies come in order, so the one before this was its previous message's.
    ready, answered[chat] = max(sent, answered[chat]), done
    if into is not None:
        into.latencies.append(done - sent)
        into.own.append(done - ready)
        into.queued += ready > sent
    check_reply(status, payload, message_id)


async def offer(pool: Pool, args: argparse.Namespace, phase: str, seconds: float) -> Paced:
    """Send Poisson arrivals at ``args.rate`` for ``seconds``, spread over the chats."""
    rng = random.Random(f"{phase}-{args.seed}")
    paced = Paced()
    into = paced if phase == "run" else None
    seqs = [0] * args.chats
    answered = [0.0] * args.chats
    tasks: set[asyncio.Task[None]] = set()
    started = time.perf_counter()
    due = started
    while (due := due + rng.expovariate(args.rate)) < started + seconds:
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        chat = rng.randrange(args.chats)  # the sum of the chats' Poisson processes
        seqs[chat] += 1
        task = asyncio.create_task(_one(pool, phase, chat, seqs[chat], into, answered))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        paced.sent += 1
    if tasks:
        await asyncio.gather(*tasks)  # an error in any request fails the bench
    paced.seconds = time.perf_counter() - started
    return paced


async def measure(server: ServerProcess, args: argparse.Namespace) -> Paced:
    pool = Pool(server.port)
    try:
        await offer(pool, args, "warm", WARMUP_SECONDS)
        before = server.cpu_seconds()
        paced = await offer(pool, args, "run", args.seconds)
        paced.gateway_cpu = server.cpu_seconds() - before
        return paced
    finally:
        await pool.aclose()


def model_env(home: Path, port: int, model_port: int) -> dict[str, str]:
    env = gateway_env(home, port)
    env.update(
        OPENAI_BASE_URL=f"http://{HOST}:{model_port}/v1",
        OPENAI_API_KEY="bench",
        CHATGATE_MODEL_PROVIDER="openai",
        CHATGATE_MODEL="bench",
    )
    return env


def chatgate_argv() -> list[str]:
    script = Path(sys.executable).parent / "chatgate"
    if script.exists():
        return [str(script), "run"]
    return [sys.executable, "-m", "gateway.cli", "run"]


def run_one(home: Path, model_ms: float, args: argparse.Namespace) -> tuple[Paced, dict[str, int]]:
    model_port, port = free_port(), free_port()
    model_argv = [sys.executable, "-m", "bench.fake_model", "--port", str(model_port)]
    model = ServerProcess(
        "model",
        [*model_argv, "--delay-ms", str(model_ms)],
        port=model_port,
        log_path=home / "model.log",
        env=dict(os.environ),
        cwd=ROOT,
    )
    gateway = ServerProcess(
        "gateway",
        [*shlex.split(args.wrap), *chatgate_argv()],
        port=port,
        log_path=home / "gateway.log",
        env=model_env(home, port, model_port),
        cwd=ROOT,
    )
    with model, gateway, asyncio.Runner(loop_factory=loop_factory("uvloop")) as runner:
        paced = runner.run(measure(gateway, args))
    return paced, count_rows(home / "state.db")


def report(model_ms: float, paced: Paced, rows: dict[str, int]) -> None:
    model = model_ms / 1000.0
    cells = " ".join(f"{paced.added_ms(f, model):>8.2f}" for f in (0.5, 0.9, 0.99, 1.0))
    offered = paced.sent / paced.seconds if paced.seconds else 0.0
    cpu = 100.0 * paced.gateway_cpu / paced.seconds if paced.seconds else 0.0
    print(f"{model_ms:>6.0f} ms {offered:>8.1f} {cells} {cpu:>7.0f}%")
    own = " ".join(f"{paced.added_ms(f, model, own=True):>8.2f}" for f in (0.5, 0.9, 0.99, 1.0))
    share = 100.0 * paced.queued / max(1, len(paced.latencies))
    print(f"{'own turn':>18} {own}   ({share:.1f}% waited for their chat's previous reply)")
    durable = rows.get("inbox done") == rows.get("inbox") and rows.get("messages") == 2 * rows.get(
        "inbox", 0
    )
    print(f"          state.db: {rows}; every message durable: {'yes' if durable else 'NO'}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--rate", type=float, default=80.0, help="messages/s over all chats")
    parser.add_argument("--seconds", type=float, default=30.0, help="measured phase")
    parser.add_argument("--model-ms", type=float, default=50.0, help="the slower model's delay")
    parser.add_argument("--only", choices=["both", "instant", "slow"], default="both")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument(
        "--wrap", default="", help="command to prefix the gateway with, e.g. 'py-spy record ... --'"
    )
    args = parser.parse_args(argv)
    if args.chats < 1 or args.rate <= 0 or args.seconds <= 0:
        parser.error("--chats >= 1, --rate > 0, --seconds > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    delays = {"both": [0.0, args.model_ms], "instant": [0.0], "slow": [args.model_ms]}
    print(
        f"{args.chats} chats, Poisson arrivals at {args.rate:.0f} msg/s (open loop), "
        f"{args.seconds:.0f} s measured after {WARMUP_SECONDS:.0f} s, {os.cpu_count()} CPUs"
    )
    print(f"goal with the {args.model_ms:.0f} ms model: added p50 <= {GOAL_P50_MS} ms, ", end="")
    print(f"p99 <= {GOAL_P99_MS} ms")
    heads = ("msg/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "cpu")
    print(f"{'model':>9} " + " ".join(f"{h:>8}" for h in heads))
    for model_ms in delays[args.only]:
        with tempfile.TemporaryDirectory(prefix="chatgate-pace-") as name:
            try:
                paced, rows = run_one(Path(name), model_ms, args)
            except ServerError as exc:
                print(f"benchmark failed: {exc}", file=sys.stderr)
                return 1
        report(model_ms, paced, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
