"""How much of each model request repeats the previous one byte for byte.

Runs the real gateway in this process against the fake OpenAI-compatible server
(both on 127.0.0.1), holds a 50-turn conversation in one session (with memory
writes, turn-only recall from the notes provider and a restart halfway), and
prints for each request the share of the previous request's bytes that form a
prefix of it. Provider prompt caches pay off only when that share is 100%.

    .venv/bin/python bench/prompt_prefix.py [--turns 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the ``tests`` fakes importable
    sys.path.insert(0, str(ROOT))

from tests.fakes.openai_server import FakeOpenAIServer  # noqa: E402
from tests.gateway_server import running_gateway  # noqa: E402


def request_bytes(request: dict[str, Any]) -> bytes:
    """What a prompt cache keys on, in prompt order: tools, then each message in turn.

    Messages are concatenated without a closing bracket, as a provider renders them
    into one token stream, so appending a message extends the previous bytes.
    """
    parts = [json.dumps(request.get("tools"), ensure_ascii=False, sort_keys=True)]
    parts += [json.dumps(m, ensure_ascii=False, sort_keys=True) for m in request["messages"]]
    return "\n".join(parts).encode()


def prefix_share(before: bytes, after: bytes) -> float:
    """The share of ``before`` that ``after`` starts with."""
    same = 0
    for a, b in zip(before, after, strict=False):
        if a != b:
            break
        same += 1
    return same / len(before)


def message_prefix_share(before: dict[str, Any], after: dict[str, Any]) -> float:
    """The share of ``before``'s messages that ``after`` repeats, in order, unchanged."""
    old, new = before["messages"], after["messages"]
    same = 0
    for a, b in zip(old, new, strict=False):
        if a != b:
            break
        same += 1
    return same / len(old)


async def converse(home: Path, turns: int) -> list[dict[str, Any]]:
    (home / "config.yaml").write_text("memory:\n  provider: notes\n", encoding="utf-8")
    async with FakeOpenAIServer() as fake:
        env = fake.gateway_env()
        async with running_gateway(home, env) as gw:
            await gw.say("the zeppelin project ships in March")
            await gw.say("/new")
        start = len(fake.requests)
        for half in (range(turns // 2), range(turns // 2, turns)):
            async with running_gateway(home, env) as gw:  # the restart happens here
                for n in half:
                    if n % 10 == 3:
                        fact = f"fact {n} about the user"
                        fake.reply_tool_call(
                            "memory", {"target": "user", "action": "add", "content": fact}
                        )
                        fake.reply_text(f"saved {n}")
                    await gw.say(f"turn {n}: how is the zeppelin project going?")
        return fake.requests[start:]


def report(requests: list[dict[str, Any]]) -> None:
    encoded = [request_bytes(r) for r in requests]
    byte_shares = [prefix_share(a, b) for a, b in zip(encoded, encoded[1:], strict=False)]
    message_shares = [
        message_prefix_share(a, b) for a, b in zip(requests, requests[1:], strict=False)
    ]
    systems = {r["messages"][0]["content"] for r in requests}
    recalled = sum("<memory-context>" in str(r["messages"][-1].get("content")) for r in requests)
    print(f"{len(requests)} requests in one session ({recalled} with turn-only recall)")
    print(f"distinct system prompts: {len(systems)}  (goal: 1)")
    print(
        "previous request's messages repeated unchanged: "
        f"min {min(message_shares):.1%}, mean {sum(message_shares) / len(message_shares):.1%}"
        "  (goal: 100%)"
    )
    print(
        "previous request's bytes (system + tools + messages) that prefix the next: "
        f"min {min(byte_shares):.1%}, mean {sum(byte_shares) / len(byte_shares):.1%}"
    )
    print(f"last request: {len(encoded[-1]):,} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args()
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "CHATGATE_MODEL"):
        os.environ.pop(name, None)
    with tempfile.TemporaryDirectory(prefix="chatgate-prefix-") as tmp:
        home = Path(tmp)
        report(asyncio.run(converse(home, args.turns)))


if __name__ == "__main__":
    main()
