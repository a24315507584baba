"""Does the background review slow down the people chatting? p50/p99 turn latency.

Runs the real gateway in this process against the fake OpenAI-compatible server (both
on 127.0.0.1). 200 chats each hold a conversation of ``--turns`` messages at once, a
person's pace: ``--think-ms`` between a reply and the next message (each chat starts at
a random offset, so the load is steady rather than in waves). Each chat's first turn,
which opens its session, is left out of the figures. The fake model answers
every call after ``--model-ms``. The run is made twice on fresh
homes: with the background review off, then on (a memory review every 10 turns) with
the fake model taking ``--review-ms`` longer for review calls. Prints both latency
distributions and their ratio; the goal is a p99 ratio of at most 1.05.

    .venv/bin/python bench/review_interference.py [--chats 200] [--turns 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the ``tests`` fakes importable
    sys.path.insert(0, str(ROOT))

from tests.fakes.openai_server import FakeOpenAIServer  # noqa: E402
from tests.gateway_server import RunningGateway, running_gateway  # noqa: E402

REVIEW = "[Background review"


async def _chat(
    gw: RunningGateway, chat: int, args: argparse.Namespace, latencies: list[float]
) -> None:
    pace = random.Random(chat)
    await asyncio.sleep(pace.uniform(0, args.think_ms / 1000))
    for n in range(args.turns):
        if n:
            await asyncio.sleep(args.think_ms / 1000)  # the person reads and types
        started = time.perf_counter()
        response = await gw.say(f"turn {n}", chat_id=f"chat-{chat}", message_id=f"{chat}-{n}")
        if n:  # the first turn opens the session and builds its prompt: not steady state
            latencies.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise SystemExit(f"turn failed: {response.status_code} {response.text}")


async def measure(args: argparse.Namespace, *, reviews: bool) -> tuple[list[float], int]:
    with tempfile.TemporaryDirectory(prefix="chatgate-review-bench-") as tmp:
        home = Path(tmp)
        (home / "config.yaml").write_text(
            f"review:\n  enabled: {str(reviews).lower()}\n"
            "sessions:\n  idle_worker_seconds: 600\n"
            "server:\n  log_level: warning\n"
        )
        async with FakeOpenAIServer(record=False, latency_seconds=args.model_ms / 1000) as fake:
            fake.routed_latency[REVIEW] = args.review_ms / 1000
            async with running_gateway(home, fake.gateway_env()) as gw:
                gw.client.timeout.read = 120
                latencies: list[float] = []
                await asyncio.gather(*(_chat(gw, c, args, latencies) for c in range(args.chats)))
                service = gw.gateway.reviews
                done = service.outcomes["scheduled"] if service is not None else 0
        return latencies, done


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--model-ms", type=float, default=50.0)
    parser.add_argument("--review-ms", type=float, default=200.0)
    parser.add_argument("--think-ms", type=float, default=4000.0)
    args = parser.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    print(
        f"{args.chats} chats x {args.turns} turns, {args.think_ms / 1000:.1f} s between turns, "
        f"model {args.model_ms:.0f} ms, review calls +{args.review_ms:.0f} ms"
    )
    results = {}
    for label, reviews in (("reviews off", False), ("reviews on", True)):
        latencies, scheduled = await measure(args, reviews=reviews)
        p50, p99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
        results[label] = (p50, p99)
        print(
            f"{label:>12}: p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  "
            f"mean {statistics.fmean(latencies) * 1000:7.1f} ms  reviews scheduled {scheduled}"
        )
    (off50, off99), (on50, on99) = results["reviews off"], results["reviews on"]
    print(f"ratio on/off: p50 {on50 / off50:.3f}  p99 {on99 / off99:.3f}  (goal p99 <= 1.05)")


if __name__ == "__main__":
    asyncio.run(main())
