"""The latency an image adds to a turn.

Runs the real gateway in this process against the fake OpenAI-compatible server (no
model latency: what is measured is the gateway's own work) and times whole webhook
turns (``POST /webhook/{route}``, waiting for the reply):

- the first turn of a new chat: text alone, then with a photo sent inline (base64), one
  of about 1 MP (already fit: stored as it is) and one of about 3 MP (downscaled to
  1568 px and re-encoded);
- a text turn in an ongoing chat, without and with a photo in its history (the image
  goes with every request: read once, then from the model client's cache).

It also times ``prepare_image`` alone for each photo size.

    .venv/bin/python bench/image_turn.py [--turns 20]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the ``tests`` fakes importable
    sys.path.insert(0, str(ROOT))

from core.media.images import prepare_image  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer  # noqa: E402
from tests.gateway_server import RunningGateway, running_gateway  # noqa: E402
from tests.image_files import jpeg  # noqa: E402

SIZES = {"1 MP (1280x800)": (1280, 800), "3 MP (2048x1536)": (2048, 1536)}


def image(data: bytes) -> dict[str, str]:
    return {"type": "image", "mime": "image/jpeg", "data_base64": base64.b64encode(data).decode()}


async def timed(turn: Callable[[], Awaitable[None]], runs: int) -> list[float]:
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        await turn()
        seconds.append(time.perf_counter() - started)
    return seconds


async def said(
    gw: RunningGateway, text: str, chat: str, images: list[dict[str, str]] | None = None
) -> None:
    answer = await gw.say(text, chat_id=chat, attachments=images or [])
    answer.raise_for_status()


async def measure(home: Path, turns: int) -> dict[str, list[float]]:
    photos = {name: [jpeg(w, h, seed=n) for n in range(turns)] for name, (w, h) in SIZES.items()}
    results: dict[str, list[float]] = {}
    async with (
        FakeOpenAIServer(record=False) as fake,
        running_gateway(home, fake.gateway_env()) as gw,
    ):
        await said(gw, "warm up", "warm-up")
        chats = iter(range(turns))
        results["new chat: text"] = await timed(
            lambda: said(gw, "hello", f"text-{next(chats)}"), turns
        )
        for name, batch in photos.items():
            queue = iter(enumerate(batch))

            async def with_photo() -> None:
                n, data = next(queue)  # noqa: B023 - used before the loop moves on
                await said(gw, "what is this?", f"photo-{n}", [image(data)])

            results[f"new chat: text and a {name} photo"] = await timed(with_photo, turns)
        await said(gw, "look", "plain")
        await said(gw, "look", "history", [image(photos["3 MP (2048x1536)"][0])])
        results["ongoing chat: text"] = await timed(lambda: said(gw, "and now?", "plain"), turns)
        results["ongoing chat: text, a photo in the history"] = await timed(
            lambda: said(gw, "and now?", "history"), turns
        )
    return results


def preparation(turns: int) -> dict[str, list[float]]:
    results = {}
    for name, (width, height) in SIZES.items():
        data = jpeg(width, height)
        seconds = []
        for _ in range(turns):
            started = time.perf_counter()
            prepare_image(data)
            seconds.append(time.perf_counter() - started)
        results[f"prepare_image, {name} ({len(data):,} bytes)"] = seconds
    return results


def report(results: dict[str, list[float]]) -> None:
    for name, seconds in results.items():
        ordered = sorted(seconds)
        p90 = ordered[int(len(ordered) * 0.9) - 1]
        median = statistics.median(seconds) * 1000
        print(f"{name:<48} median {median:7.1f} ms   p90 {p90 * 1000:7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "CHATGATE_MODEL"):
        os.environ.pop(name, None)
    with tempfile.TemporaryDirectory(prefix="chatgate-images-") as tmp:
        report(asyncio.run(measure(Path(tmp), args.turns)))
    report(preparation(args.turns))


if __name__ == "__main__":
    main()
