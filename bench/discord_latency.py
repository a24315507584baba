"""A Discord message's round trip through the gateway, and what discord.py costs in memory.

``chatgate run`` runs as its own process (as in production) against a fake Discord
(REST and gateway WebSocket) and the fake OpenAI-compatible model, both in this
process. ``--users`` people each DM the bot ``--messages`` times, one after the other
(the next once the answer arrived, after ``--think-ms`` on average): latency is from
the message's MESSAGE_CREATE being queued at the fake to the answer's POST reaching
it, so it includes the model's ``--model-ms``. Then the gateway's resident memory is
compared, at start, with a run of the webhook adapter alone.

    .venv/bin/python bench/discord_latency.py [--users 50] [--messages 20]
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
if str(ROOT) not in sys.path:  # run as a script: make ``bench`` and ``tests`` importable
    sys.path.insert(0, str(ROOT))

from bench.servers import HOST, ServerProcess, free_port  # noqa: E402
from tests.fakes.discord_server import FakeDiscord, make_user  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer  # noqa: E402


class Answers:
    """Wakes the one waiting for the answer to each message, in one watcher."""

    def __init__(self, fake: FakeDiscord) -> None:
        self._fake = fake
        self._waiting: dict[str, asyncio.Future[float]] = {}
        self._seen = 0

    def expect(self, message_id: str) -> asyncio.Future[float]:
        future = asyncio.get_running_loop().create_future()
        self._waiting[message_id] = future
        return future

    async def watch(self) -> None:
        while True:
            await self._fake.wait_until(lambda: len(self._fake.sent) > self._seen, timeout=3600)
            now = time.perf_counter()
            for sent in self._fake.sent[self._seen :]:
                future = self._waiting.pop(sent.reference_id or "", None)
                if future is not None and not future.done():
                    future.set_result(now)
            self._seen = len(self._fake.sent)


async def person(
    fake: FakeDiscord, answers: Answers, n: int, args: argparse.Namespace, out: list[float]
) -> None:
    user = make_user(f"person{n}")
    pace = random.Random(n)
    await asyncio.sleep(pace.uniform(0, args.think_ms / 1000))
    for i in range(args.messages):
        if i:
            await asyncio.sleep(pace.uniform(0.5, 1.5) * args.think_ms / 1000)
        started = time.perf_counter()
        message = fake.dm(f"message {i}", author=user)
        answered = await asyncio.wait_for(answers.expect(message["id"]), timeout=60)
        if i:  # the first one opens the session: not steady state
            out.append(answered - started)


def rss_mib(server: ServerProcess) -> float:
    """Resident memory of the server's process group (the gateway), in MiB."""
    total = 0
    proc = server._proc  # noqa: SLF001 - a bench reading its own child
    assert proc is not None
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(
                line.split(":", 1) for line in status.read_text().splitlines() if ":" in line
            )
            stat = (status.parent / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(stat[2]) == proc.pid and "VmRSS" in fields:
            total += int(fields["VmRSS"].split()[0])
    return total / 1024


def gateway(home: Path, env: dict[str, str]) -> ServerProcess:
    port = free_port()
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CHATGATE_", "OPENAI_"))}
    full.update(env, CHATGATE_HOME=str(home), CHATGATE_HOST=HOST, CHATGATE_PORT=str(port))
    full["CHATGATE_LOG_LEVEL"] = "warning"
    script = Path(sys.executable).parent / "chatgate"
    argv = [str(script), "run"] if script.exists() else [sys.executable, "-m", "gateway.cli"]
    return ServerProcess(
        "gateway", argv, port=port, log_path=home / "gateway.log", env=full, cwd=ROOT
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--think-ms", type=float, default=1000.0)
    parser.add_argument("--model-ms", type=float, default=50.0)
    args = parser.parse_args()
    async with (
        FakeOpenAIServer(record=False, latency_seconds=args.model_ms / 1000) as model,
        FakeDiscord() as fake,
    ):
        with tempfile.TemporaryDirectory(prefix="chatgate-discord-bench-") as tmp:
            home = Path(tmp)
            env = {**model.gateway_env(), **fake.gateway_env(DISCORD_ALLOW_ALL_USERS="true")}
            server = gateway(home, env)
            await asyncio.to_thread(server.__enter__)
            discord_idle = rss_mib(server)
            answers = Answers(fake)
            watcher = asyncio.create_task(answers.watch())
            latencies: list[float] = []
            started = time.perf_counter()
            try:
                people = (person(fake, answers, n, args, latencies) for n in range(args.users))
                await asyncio.gather(*people)
                elapsed = time.perf_counter() - started
                discord_busy = rss_mib(server)
            finally:
                watcher.cancel()
                await asyncio.to_thread(server.stop)
        with tempfile.TemporaryDirectory(prefix="chatgate-webhook-bench-") as tmp:
            plain = gateway(Path(tmp), model.gateway_env())
            await asyncio.to_thread(plain.__enter__)
            try:
                webhook_rss = rss_mib(plain)
            finally:
                await asyncio.to_thread(plain.stop)
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000
    total = args.users * args.messages
    print(
        f"{args.users} people x {args.messages} DMs, {args.think_ms / 1000:.1f} s between, "
        f"model {args.model_ms:.0f} ms"
    )
    print(f"round trip: p50 {p50:.1f} ms  p99 {p99:.1f} ms  ({total / elapsed:.0f} msgs/s offered)")
    print(f"gateway added over the model: p50 {p50 - args.model_ms:.1f} ms")
    print(
        f"resident memory at start: {discord_idle:.0f} MiB with Discord, "
        f"{webhook_rss:.0f} MiB webhook only; {discord_busy:.0f} MiB after the run"
    )


if __name__ == "__main__":
    asyncio.run(main())
