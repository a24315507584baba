"""CPU per turn as a session grows: 50, 200, 500 and 1,000 prior turns.

Starts ``bench.fake_model`` (an OpenAI-compatible model that answers in one write) and
the real gateway (``chatgate run``, the ``openai`` provider pointed at the fake, a
temporary ``CHATGATE_HOME``), both on 127.0.0.1. One chat per length N is filled to N
turns through the webhook; then ``--turns`` more turns per chat are measured one after
the other, in ``--blocks`` blocks that take the chats in turn (forward, then backward,
then forward again), so a machine that speeds up or slows down during the run weighs on
every length alike instead of on whichever came first. For each length: the gateway's
process CPU per turn (background reviews included: one is due every 10 turns) and the
p50/p99 of the webhook round trip. Printed figures, not a timed test.

    .venv/bin/python bench/session_length.py [--lengths 50,200,500,1000] [--turns 500]

Goals (issue 19): at most 2.5 ms CPU per turn at 50 prior turns; at 1,000 prior turns
at most 1.3 times the 50-turn figure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the ``bench`` package importable
    sys.path.insert(0, str(ROOT))

from bench.loadgen import LoadError, RawPoster, Target, check_reply, message_body  # noqa: E402
from bench.servers import (  # noqa: E402
    HOST,
    ServerError,
    ServerProcess,
    add_settings_option,
    free_port,
    settings_env,
)
from bench.throughput import bench_home, gateway_argv, gateway_env  # noqa: E402

GOAL_CPU_MS = 2.5
GOAL_GROWTH = 1.3


@dataclass(frozen=True, slots=True)
class Level:
    prior: int
    cpu_ms: float
    p50_ms: float
    p99_ms: float


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="chatgate CPU per turn vs session length")
    parser.add_argument("--lengths", default="50,200,500,1000", help="prior turns, comma list")
    parser.add_argument(
        "--turns",
        type=int,
        default=500,
        help="measured turns per length (fewer read high and vary more)",
    )
    parser.add_argument(
        "--blocks",
        type=int,
        default=10,
        help="measure each length in this many blocks, the lengths taken in turn",
    )
    parser.add_argument("--wrap", default="", help="prefix for the gateway command (py-spy)")
    parser.add_argument("--keep", action="store_true", help="keep CHATGATE_HOME")
    add_settings_option(parser)
    args = parser.parse_args(argv)
    args.profile_out = None  # gateway_argv's other option
    return args


async def _turns(
    poster: RawPoster, target: Target, chat: int, first: int, count: int
) -> list[float]:
    latencies = []
    for seq in range(first, first + count):
        message_id, body = message_body("len", chat, seq)
        sent = time.perf_counter()
        status, payload = await poster.post(target.path, body, target.headers(body))
        latencies.append(time.perf_counter() - sent)
        check_reply(status, payload, message_id)
    return latencies


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))] * 1000.0


@dataclass(slots=True)
class _Chat:
    """One length's chat: its number, prior turns and what its measured turns took."""

    number: int
    prior: int
    cpu: float = 0.0
    latencies: list[float] = field(default_factory=list)

    @property
    def sent(self) -> int:
        """Messages this chat has sent: the next one's sequence number."""
        return self.prior + len(self.latencies)

    def level(self) -> Level:
        turns = len(self.latencies)
        return Level(
            self.prior,
            1000.0 * self.cpu / turns,
            _percentile(self.latencies, 0.5),
            _percentile(self.latencies, 0.99),
        )


def block_order(count: int, blocks: int) -> list[int]:
    """Indexes of ``count`` chats, visited ``blocks`` times: forward, backward, forward."""
    order: list[int] = []
    for block in range(blocks):
        chats = range(count)
        order.extend(chats if block % 2 == 0 else reversed(chats))
    return order


async def measure_levels(
    gateway: ServerProcess, lengths: list[int], turns: int, blocks: int, first_chat: int = 0
) -> list[Level]:
    target = Target("gateway", HOST, gateway.port)
    poster = RawPoster(HOST, gateway.port)
    chats = [_Chat(first_chat + i, prior) for i, prior in enumerate(lengths)]
    try:
        for chat in chats:
            await _turns(poster, target, chat.number, 0, chat.prior)
        blocks = max(1, min(blocks, turns))
        for block, index in enumerate(block_order(len(chats), blocks)):
            chat = chats[index]
            # Spread ``turns`` over the blocks, the remainder to the first ones.
            count = turns // blocks + (1 if block // len(chats) < turns % blocks else 0)
            before = gateway.cpu_seconds()
            chat.latencies += await _turns(poster, target, chat.number, chat.sent, count)
            chat.cpu += gateway.cpu_seconds() - before
    finally:
        await poster.aclose()
    return [chat.level() for chat in chats]


def run(home: Path, args: argparse.Namespace) -> list[Level]:
    model_port, port = free_port(), free_port()
    model = ServerProcess(
        "fake-model",
        [sys.executable, "-m", "bench.fake_model", "--port", str(model_port)],
        port=model_port,
        log_path=home / "model.log",
        env=dict(os.environ),
        cwd=ROOT,
        ready_path="/v1/models",
    )
    env = gateway_env(home, port)
    env.update(
        OPENAI_BASE_URL=f"http://{HOST}:{model_port}/v1",
        OPENAI_API_KEY="sk-bench",
        CHATGATE_MODEL="fake-model",
    )
    env.update(settings_env(args))
    gateway = ServerProcess(
        "gateway", gateway_argv(args), port=port, log_path=home / "gateway.log", env=env, cwd=ROOT
    )
    lengths = [int(n) for n in args.lengths.split(",")]
    with model, gateway, asyncio.Runner() as runner:
        # Warm-up: imports, the first session.
        runner.run(measure_levels(gateway, [5], 20, 1, first_chat=10_000))
        return runner.run(measure_levels(gateway, lengths, args.turns, args.blocks))


def report(levels: list[Level], turns: int) -> None:
    print(
        f"\n{turns} measured turns per length, one chat each, one turn at a time, "
        f"the chats taken in turn, {os.cpu_count()} CPUs"
    )
    print(f"{'prior turns':>11} {'cpu ms/turn':>12} {'p50 ms':>8} {'p99 ms':>8}")
    for level in levels:
        print(f"{level.prior:>11} {level.cpu_ms:>12.2f} {level.p50_ms:>8.2f} {level.p99_ms:>8.2f}")
    first, last = levels[0], levels[-1]
    print(f"cpu at {first.prior}: {first.cpu_ms:.2f} ms (goal <= {GOAL_CPU_MS})")
    if len(levels) > 1 and first.cpu_ms > 0:
        growth = last.cpu_ms / first.cpu_ms
        print(f"cpu {last.prior}/{first.prior}: {growth:.2f}x (goal <= {GOAL_GROWTH})")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        with bench_home(args.keep) as home:
            levels = run(home, args)
    except (LoadError, ServerError) as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; servers stopped", file=sys.stderr)
        return 130
    report(levels, args.turns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
