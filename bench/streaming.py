"""Replies streaming to Telegram: how soon the first preview shows, how fast it changes,
and how many finals a turn sends.

``chatgate run`` runs as its own process against the fake Telegram Bot API and the fake
OpenAI-compatible model (both in this process), the model streaming ``--tokens-per-second``
(20) tokens of a ``--tokens``-token answer. ``--chats`` private chats and as many groups
each ask ``--turns`` questions, one after the other, all chats at once. For each turn:

- **first preview**: from the model's first token (the fake model sends it one token's
  time after the request reaches it) to the first preview reaching the fake Telegram (a
  ``sendMessageDraft`` in a private chat, the preview's ``sendMessage`` in a group).
  Goal: under 1.2 s.
- **updates a second**: the preview's updates in that chat over the time they span, and
  the shortest gap between two of them (goal: at most 1 a second, so no gap under 1 s).
- **finals**: messages that end the turn reading the whole answer (goal: exactly 1; in a
  group, the preview message edited into the final, and no other message sent).

    .venv/bin/python bench/streaming.py [--chats 3] [--turns 3] [--tokens 60]

Loopback only; every wait is bounded; the gateway is stopped on exit and on CTRL-C.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make ``bench`` and ``tests`` importable
    sys.path.insert(0, str(ROOT))

from starlette.requests import Request  # noqa: E402
from starlette.responses import Response  # noqa: E402

from bench.discord_latency import gateway  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer, last_user_content  # noqa: E402
from tests.fakes.telegram_server import ApiCall, FakeTelegram, group_chat, make_user  # noqa: E402

GOAL_FIRST_PREVIEW_SECONDS = 1.2
TURN_TIMEOUT_SECONDS = 120.0
PREVIEW_METHODS = ("sendMessageDraft", "sendMessage", "editMessageText")
MARKER = re.compile(r"q\d+x\d+")  # names each question and its scripted answer


class TimedModel(FakeOpenAIServer):
    """The fake model, noting when each request reaches it (keyed by its question)."""

    def __init__(self, *, token_seconds: float) -> None:
        super().__init__(token_seconds=token_seconds)
        self.arrived: dict[str, float] = {}

    async def _chat_completions(self, request: Request) -> Response:
        at = time.monotonic()
        body = await request.json()
        found = MARKER.search(last_user_content(body))
        if found is not None:
            self.arrived[found.group()] = at
        return await super()._chat_completions(request)


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn's figures."""

    kind: str
    first_preview: float
    rate: float  # preview updates a second over the span they cover (0: fewer than 2)
    min_gap: float  # the shortest time between two updates (inf: fewer than 2)
    finals: int
    messages: int  # messages the turn sent new


async def one_turn(
    tg: FakeTelegram, model: TimedModel, chat_id: int, kind: str, marker: str, answer: str
) -> Turn:
    start = len(tg.requests)
    user = make_user(chat_id if kind == "private" else 7_000_000 + abs(chat_id) % 1_000_000)
    if kind == "private":
        update = tg.private_message(f"tell me {marker}", user=user)
    else:
        chat = group_chat(chat_id, title=f"Group {chat_id}")
        update = tg.group_message(f"tell me {marker}", user=user, chat=chat, mention=True)
    tg.push_update(update)
    await tg.wait_until(
        lambda: final_shown(tg, chat_id, answer), timeout=TURN_TIMEOUT_SECONDS, what=marker
    )
    calls = [
        c
        for c in tg.requests[start:]
        if c.method in PREVIEW_METHODS and int(c.params.get("chat_id", 0)) == chat_id
    ]
    return measure(kind, calls, model.arrived[marker] + model.token_seconds, answer)


def final_shown(tg: FakeTelegram, chat_id: int, answer: str) -> bool:
    return any(
        key[0] == chat_id and message.get("text") == answer for key, message in tg.messages.items()
    )


def measure(kind: str, calls: list[ApiCall], first_token: float, answer: str) -> Turn:
    if kind == "private":
        updates = [c for c in calls if c.method == "sendMessageDraft"]
        finals = [c for c in calls if c.method == "sendMessage" and c.params["text"] == answer]
        sent = [c for c in calls if c.method == "sendMessage"]
    else:
        sent = [c for c in calls if c.method == "sendMessage"]
        edits = [c for c in calls if c.method == "editMessageText"]
        updates = sent[:1] + edits[:-1]  # the last edit is the final taking the preview over
        finals = edits[-1:] if edits and edits[-1].params["text"] == answer else []
    times = [c.at for c in updates]
    span = times[-1] - times[0] if len(times) > 1 else 0.0
    return Turn(
        kind=kind,
        first_preview=times[0] - first_token if times else float("inf"),
        rate=(len(times) - 1) / span if span else 0.0,
        min_gap=min((b - a for a, b in pairwise(times)), default=float("inf")),
        finals=len(finals),
        messages=len(sent),
    )


async def chat(
    tg: FakeTelegram, model: TimedModel, chat_id: int, kind: str, args: argparse.Namespace
) -> list[Turn]:
    turns = []
    for n in range(args.turns):
        marker = f"q{abs(chat_id)}x{n}"
        answer = " ".join(f"{marker}w{i}" for i in range(args.tokens))
        model.reply_text(answer, when=marker)
        turns.append(await one_turn(tg, model, chat_id, kind, marker, answer))
    return turns


def report(kind: str, turns: list[Turn]) -> None:
    firsts = sorted(t.first_preview for t in turns)
    verdict = "ok" if firsts[-1] < GOAL_FIRST_PREVIEW_SECONDS else "OVER GOAL"
    print(
        f"{kind:8} {len(turns)} turns  first preview after the first token: "
        f"p50 {statistics.median(firsts) * 1000:.0f} ms, max {firsts[-1] * 1000:.0f} ms "
        f"(goal < {GOAL_FIRST_PREVIEW_SECONDS * 1000:.0f} ms: {verdict})"
    )
    print(
        f"{'':8} preview updates a second per chat: max {max(t.rate for t in turns):.2f}, "
        f"shortest gap {min(t.min_gap for t in turns) * 1000:.0f} ms; "
        f"finals per turn {sorted({t.finals for t in turns})}, "
        f"messages sent per turn {sorted({t.messages for t in turns})}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=3, help="private chats, and as many groups")
    parser.add_argument("--turns", type=int, default=3, help="questions each chat asks")
    parser.add_argument("--tokens", type=int, default=60, help="tokens in each answer")
    parser.add_argument("--tokens-per-second", type=float, default=20.0)
    args = parser.parse_args()
    async with (
        TimedModel(token_seconds=1 / args.tokens_per_second) as model,
        FakeTelegram() as tg,
    ):
        with tempfile.TemporaryDirectory(prefix="chatgate-streaming-bench-") as tmp:
            env = {**model.gateway_env(), **tg.gateway_env(TELEGRAM_ALLOW_ALL_USERS="true")}
            server = gateway(Path(tmp), env)
            await asyncio.to_thread(server.__enter__)
            try:
                private = [
                    chat(tg, model, 8_000_001 + n, "private", args) for n in range(args.chats)
                ]
                groups = [
                    chat(tg, model, -1_005_000_001 - n, "group", args) for n in range(args.chats)
                ]
                results = await asyncio.gather(*private, *groups)
            finally:
                await asyncio.to_thread(server.stop)
    print(
        f"{args.chats} private chats and {args.chats} groups at once, {args.turns} turns each, "
        f"{args.tokens} tokens at {args.tokens_per_second:g} tokens/s"
    )
    report("private", [t for turns in results[: args.chats] for t in turns])
    report("group", [t for turns in results[args.chats :] for t in turns])


if __name__ == "__main__":
    asyncio.run(main())
