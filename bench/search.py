"""Search latency and insert rate on a generated SessionDB (issue 5, Measure).

    python -m bench.search [--messages 1000000] [--sessions 10000] [--queries 200]

Builds a SQLite file through the real migrations, inserts generated messages (Zipf
word frequencies, a few percent CJK) through plain sqlite3 with the FTS triggers on,
then times the search repository's ``find_messages`` with scope "all" over rare, common,
phrase and CJK queries.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from core.store.db import SessionDB
from core.store.schema_version import upgrade_schema
from core.store.search.matches import SearchScope

VOCABULARY = 50_000
BATCH = 1_000
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"] + ["sh", "th", "qu"]
CJK_WORDS = ["东京塔", "大阪城", "会议", "明天", "天气预报", "数据库", "机器学习", "咖啡店"]
GOALS = {"p50_ms": 20.0, "p95_ms": 60.0, "inserts_per_s": 5_000.0}


def words(rng: random.Random) -> list[str]:
    """Distinct pronounceable words; index = frequency rank."""
    seen: dict[str, None] = {}
    while len(seen) < VOCABULARY:
        seen.setdefault("".join(rng.choices(SYLLABLES, k=rng.randint(1, 4))), None)
    return list(seen)


def message_texts(rng: random.Random, vocab: list[str], count: int) -> list[str]:
    cumulative = list(itertools.accumulate(1 / rank for rank in range(1, len(vocab) + 1)))
    total = cumulative[-1]
    texts = []
    for _ in range(count):
        length = max(1, int(rng.lognormvariate(2.8, 0.8)))
        picks = [vocab[bisect.bisect(cumulative, rng.random() * total)] for _ in range(length)]
        if rng.random() < 0.03:
            picks.insert(rng.randrange(len(picks) + 1), rng.choice(CJK_WORDS))
        texts.append(" ".join(picks))
    return texts


def build(path: Path, messages: int, sessions: int, seed: int) -> float:
    """Fill the database; returns inserted messages per second."""
    rng = random.Random(seed)
    vocab = words(rng)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    with conn:
        conn.executemany(
            "INSERT INTO sessions (id, session_key, platform, chat_id, user_id, started_at, "
            "last_active_at, provider, model) "
            "VALUES (?, ?, 'telegram', ?, ?, 0, 0, 'offline', 'offline')",
            [(f"s{n}", f"telegram:c{n}", f"c{n}", f"u{n % 997}") for n in range(sessions)],
        )
    elapsed = 0.0
    for start in range(0, messages, BATCH):
        count = min(BATCH, messages - start)
        texts = message_texts(rng, vocab, count)
        rows = [
            (f"s{rng.randrange(sessions)}", "user" if i % 2 else "assistant", text, start + i)
            for i, text in enumerate(texts)
        ]
        began = time.perf_counter()
        with conn:
            conn.executemany(
                "INSERT INTO messages (session_id, role, content, created_at) VALUES (?,?,?,?)",
                rows,
            )
        elapsed += time.perf_counter() - began
    conn.close()
    return messages / elapsed


def query_set(seed: int, count: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    vocab = words(rng)  # the same words the build used (same seed, same draw order)
    kinds: list[tuple[str, Callable[[], str]]] = [
        ("rare", lambda: vocab[rng.randrange(5_000, VOCABULARY)]),
        ("common", lambda: vocab[rng.randrange(0, 50)]),
        ("two terms", lambda: f"{vocab[rng.randrange(0, 500)]} {vocab[rng.randrange(0, 500)]}"),
        ("phrase", lambda: f'"{vocab[rng.randrange(0, 200)]} {vocab[rng.randrange(0, 200)]}"'),
        ("prefix", lambda: vocab[rng.randrange(0, 2_000)][:3] + "*"),
        ("cjk", lambda: rng.choice(CJK_WORDS)),
    ]
    return [(name, make()) for _ in range(count // len(kinds)) for name, make in kinds]


async def measure(path: Path, queries: list[tuple[str, str]]) -> dict[str, list[float]]:
    scope = SearchScope("telegram", "c0", None, "u0", mode="all")
    timings: dict[str, list[float]] = {}
    async with SessionDB(f"sqlite:///{path}") as db, db.search.reading() as reader:
        for name, query in queries:
            began = time.perf_counter()
            await reader.find_messages(query, scope, limit=10)
            timings.setdefault(name, []).append((time.perf_counter() - began) * 1000)
    return timings


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def report(rate: float, timings: dict[str, list[float]]) -> None:
    every = [value for values in timings.values() for value in values]
    for name, values in timings.items():
        print(
            f"  {name:10} p50 {statistics.median(values):8.2f} ms  "
            f"p95 {percentile(values, 0.95):8.2f} ms  max {max(values):8.2f} ms"
        )
    figures = {"p50_ms": statistics.median(every), "p95_ms": percentile(every, 0.95)}
    for key, value in figures.items():
        verdict = "ok" if value <= GOALS[key] else "MISSED"
        print(f"search {key}: {value:.2f} (goal <= {GOALS[key]:g}) {verdict}")
    verdict = "ok" if rate >= GOALS["inserts_per_s"] else "MISSED"
    print(f"inserts/s with FTS triggers: {rate:,.0f} (goal >= 5,000) {verdict}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        await upgrade_schema(f"sqlite:///{path}")
        rate = build(path, args.messages, args.sessions, args.seed)
        print(
            f"{args.messages:,} messages over {args.sessions:,} sessions, "
            f"{path.stat().st_size / 2**20:,.0f} MiB"
        )
        report(rate, await measure(path, query_set(args.seed, args.queries)))


if __name__ == "__main__":
    asyncio.run(main())
