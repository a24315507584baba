"""Does the background review slow down the people chatting? p50/p99 turn latency.

``chatgate run`` runs as its own process (as in production), talking to the fake
OpenAI-compatible server in this process; 200 chats each hold a conversation of
``--turns`` messages at a person's pace (on average ``--think-ms`` between a reply and
the next message, drawn at random for each turn; each chat also starts at a random
offset, so the load is steady rather than in waves). The fake model answers every
call after ``--model-ms``.

Rounds alternate: reviews off, then on (a memory review every 10 turns, with the fake
model taking ``--review-ms`` longer for review calls), ``--rounds`` times, each on a
fresh home. Each chat's first turn, which opens its session, is left out. Prints every
round and the median p50/p99 of each setting with their ratio; the goal is a p99 ratio
of at most 1.05.

    .venv/bin/python bench/review_interference.py [--chats 200] [--turns 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make ``bench`` and ``tests`` importable
    sys.path.insert(0, str(ROOT))

from bench.loadgen import RawPoster  # noqa: E402
from bench.servers import HOST, ServerProcess, free_port  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer  # noqa: E402

REVIEW = "[Background review"


async def _chat(port: int, chat: int, args: argparse.Namespace, latencies: list[float]) -> None:
    # One keep-alive connection per chat, written straight on the stream: the lightest
    # client there is, so the figures are the gateway's, not the load generator's.
    poster = RawPoster(HOST, port)
    pace = random.Random(chat)
    try:
        await asyncio.sleep(pace.uniform(0, args.think_ms / 1000))
        for n in range(args.turns):
            # The person reads and types; people differ, so chats never fall in step. At
            # most 1.5x the mean: under uvicorn's 5 s keep-alive with the 3 s default.
            if n:
                await asyncio.sleep(pace.uniform(0.5, 1.5) * args.think_ms / 1000)
            body = {"chat_id": f"chat-{chat}", "user_id": "u", "text": f"turn {n}"}
            payload = json.dumps({**body, "message_id": f"{chat}-{n}"}).encode()
            started = time.perf_counter()
            status, answer = await poster.post("/webhook/bench", payload, {})
            if n:  # the first turn opens the session and builds its prompt: not steady state
                latencies.append(time.perf_counter() - started)
            if status != 200:
                raise SystemExit(f"turn failed: {status} {answer[:200]!r}")
    finally:
        await poster.aclose()


async def one_round(
    args: argparse.Namespace, fake: FakeOpenAIServer, *, reviews: bool
) -> tuple[list[float], int]:
    with tempfile.TemporaryDirectory(prefix="chatgate-review-bench-") as tmp:
        if args.keep_logs:
            tmp = tempfile.mkdtemp(prefix="chatgate-review-bench-kept-")
        home, port = Path(tmp), free_port()
        (home / "config.yaml").write_text(
            f"review:\n  enabled: {str(reviews).lower()}\nsessions:\n  idle_worker_seconds: 600\n"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CHATGATE_", "OPENAI_"))}
        env.update(
            fake.gateway_env(),
            CHATGATE_HOME=str(home),
            CHATGATE_HOST=HOST,
            CHATGATE_PORT=str(port),
            CHATGATE_LOG_LEVEL="warning",
        )
        script = Path(sys.executable).parent / "chatgate"
        argv = [str(script), "run"] if script.exists() else [sys.executable, "-m", "gateway.cli"]
        if args.profile_out is not None and reviews:
            out = str(args.profile_out)
            argv = [sys.executable, "-m", "bench.profile_gateway", "--out", out]
        server = ServerProcess(
            "gateway", argv, port=port, log_path=home / "gateway.log", env=env, cwd=ROOT
        )
        before = fake.started.get(REVIEW, 0)
        await asyncio.to_thread(server.__enter__)  # the fake model keeps serving meanwhile
        latencies: list[float] = []
        try:
            await asyncio.gather(*(_chat(port, c, args, latencies) for c in range(args.chats)))
        finally:
            await asyncio.to_thread(server.stop)
        return latencies, fake.started.get(REVIEW, 0) - before


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model-ms", type=float, default=50.0)
    parser.add_argument("--review-ms", type=float, default=200.0)
    parser.add_argument("--think-ms", type=float, default=3000.0)
    parser.add_argument("--keep-logs", action="store_true", help="keep each round's home")
    parser.add_argument(
        "--profile-out", type=Path, default=None, help="cProfile the gateway with reviews on"
    )
    args = parser.parse_args()
    print(
        f"{args.chats} chats x {args.turns} turns, {args.think_ms / 1000:.1f} s between turns, "
        f"model {args.model_ms:.0f} ms, review calls +{args.review_ms:.0f} ms, "
        f"{args.rounds} rounds each"
    )
    figures: dict[str, list[tuple[float, float]]] = {"reviews off": [], "reviews on": []}
    async with FakeOpenAIServer(record=False, latency_seconds=args.model_ms / 1000) as fake:
        fake.routed_latency[REVIEW] = args.review_ms / 1000
        for n in range(args.rounds):
            for label, reviews in (("reviews off", False), ("reviews on", True)):
                latencies, review_calls = await one_round(args, fake, reviews=reviews)
                p50, p99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
                figures[label].append((p50, p99))
                print(
                    f"round {n + 1} {label:>11}: p50 {p50:6.1f} ms  p99 {p99:6.1f} ms  "
                    f"mean {statistics.fmean(latencies) * 1000:6.1f} ms  "
                    f"review model calls {review_calls}"
                )
    med = {
        k: tuple(statistics.median(v[i] for v in rows) for i in (0, 1))
        for k, rows in figures.items()
    }
    (off50, off99), (on50, on99) = med["reviews off"], med["reviews on"]
    print(f"median reviews off: p50 {off50:6.1f} ms  p99 {off99:6.1f} ms")
    print(f"median reviews on:  p50 {on50:6.1f} ms  p99 {on99:6.1f} ms")
    print(f"ratio on/off: p50 {on50 / off50:.3f}  p99 {on99 / off99:.3f}  (goal p99 <= 1.05)")


if __name__ == "__main__":
    asyncio.run(main())
