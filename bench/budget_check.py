"""What checking a budget costs a turn once the month holds many usage rows.

Fills a temporary SQLite SessionDB with ``--rows`` usage rows spread over this month
(one model call each, over ``--chats`` chats), then times ``--checks`` budget checks of
the gateway's scope (``budgets.global``, which sums every call) and of one chat's, each
after one more call is recorded, as a turn would see them:

- summed from every row of the month, as each check did before running sums;
- through ``RunningSums``, which reads only the rows added since its last look.

    .venv/bin/python bench/budget_check.py [--rows 100000] [--checks 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the ``bench`` package importable
    sys.path.insert(0, str(ROOT))

from core.clock import SystemClock  # noqa: E402
from core.store.db import SessionDB  # noqa: E402
from core.store.schema_version import upgrade_schema  # noqa: E402
from core.store.tx import Tx, insert_sql  # noqa: E402
from core.store.usage import Scope, UsageRecord  # noqa: E402
from core.usage.budgets import RunningSums  # noqa: E402

MONTH_SECONDS = 30 * 86_400


def record(n: int, at: float, chats: int) -> UsageRecord:
    chat = f"webhook:c{n % chats}"
    return UsageRecord(
        at=at,
        kind="turn",
        provider="openai",
        model="m",
        input_tokens=1_000,
        output_tokens=200,
        cost=0.01,
        session_id=f"s{n % chats}",
        chat_key=chat,
        person=f"webhook:u{n % chats}",
        platform="webhook",
        route="main",
    )


async def fill(db: SessionDB, rows: int, chats: int, month_start: float) -> None:
    columns = tuple(UsageRecord.__dataclass_fields__)
    sql = insert_sql("usage", columns)
    step = MONTH_SECONDS / max(rows, 1)
    for first in range(0, rows, 5_000):
        batch = [
            {c: getattr(record(n, month_start + n * step, chats), c) for c in columns}
            for n in range(first, min(rows, first + 5_000))
        ]

        def write(tx: Tx, batch: list[dict[str, object]] = batch) -> None:
            tx.executemany(sql, batch)

        await db.write(write)


async def timed(
    db: SessionDB, checks: int, chats: int, check: Callable[[], Awaitable[object]]
) -> list[float]:
    spent = []
    for n in range(checks):
        await db.usage.add(record(n, time.time(), chats))  # a turn's call, then the next check
        started = time.perf_counter()
        await check()
        spent.append((time.perf_counter() - started) * 1000)
    return spent


async def run(home: Path, args: argparse.Namespace) -> None:
    url = f"sqlite:///{home / 'state.db'}"
    await upgrade_schema(url)
    now = time.time()
    month_start, day_start = now - MONTH_SECONDS, now - 86_400
    async with SessionDB(url) as db:
        started = time.perf_counter()
        await fill(db, args.rows, args.chats, month_start)
        print(f"{args.rows} usage rows this month in {time.perf_counter() - started:.1f} s")
        for name, scope in (
            ("the gateway's", Scope()),
            ("one chat's", Scope(chat_key="webhook:c1")),
        ):
            sums = RunningSums(db.usage, SystemClock())

            def every_row(scope: Scope = scope) -> Awaitable[object]:
                return db.usage.used_after(scope, day_start=day_start, month_start=month_start)

            def running(scope: Scope = scope, sums: RunningSums = sums) -> Awaitable[object]:
                return sums.used(scope, day_start=day_start, month_start=month_start)

            for how, check in (("every row", every_row), ("running sums", running)):
                spent = await timed(db, args.checks, args.chats, check)
                p50 = statistics.median(spent)
                p99 = statistics.quantiles(spent, n=100)[98]
                print(f"{name:14} scope, {how:13}: p50 {p50:8.3f} ms, p99 {p99:8.3f} ms a check")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--chats", type=int, default=5_000)
    parser.add_argument("--checks", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="chatgate-budget-") as name:
        asyncio.run(run(Path(name), args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
