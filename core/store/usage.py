"""Usage rows (one per model call) and budget notices: every read and write of them.

Reports group the rows by one dimension (chat, person, platform, kind, provider or model)
since a moment; budgets sum what one scope used since the start of a day and a month in
one query; a budget notice is claimed once per budget and period across replicas (the
primary key decides, and each claim carries a token so its writer knows it won).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Collection
from typing import Any, Literal

from sqlalchemy import ColumnElement, and_, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from core.record import record
from core.store.reads import Reads
from core.store.tx import Tx, insert_sql
from core.store.usage_schema import usage
from core.store.writer import Writer

Dimension = Literal["chat", "person", "platform", "kind", "provider", "model"]
COLUMN_OF: dict[str, str] = {
    "chat": "chat_key",
    "person": "person",
    "platform": "platform",
    "kind": "kind",
    "provider": "provider",
    "model": "model",
}


@record
class UsageRecord:
    """One model call, as ``core.usage.meter`` records it."""

    at: float
    kind: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float | None = None
    session_id: str | None = None
    chat_key: str | None = None
    person: str | None = None
    platform: str | None = None
    route: str | None = None


@record
class Scope:
    """Which rows a sum or report covers; None: any."""

    chat_key: str | None = None
    person: str | None = None
    platform: str | None = None
    kinds: Collection[str] | None = None


@record
class Used:
    """Tokens (input + output) and cost of a scope since a day's and a month's start."""

    day_tokens: int = 0
    day_cost: float = 0.0
    month_tokens: int = 0
    month_cost: float = 0.0

    def plus(self, more: Used) -> Used:
        return Used(
            self.day_tokens + more.day_tokens,
            self.day_cost + more.day_cost,
            self.month_tokens + more.month_tokens,
            self.month_cost + more.month_cost,
        )


@record
class Total:
    """One group of a report (``key`` None: no grouping, or rows without that value)."""

    key: str | None
    calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    # None when no row of the group had a price.
    cost: float | None


_COLUMNS = tuple(UsageRecord.__dataclass_fields__)
_INSERT = insert_sql("usage", _COLUMNS)
_CLAIM = insert_sql(
    "budget_notices", ("budget", "period", "claim", "noticed_at"), " ON CONFLICT DO NOTHING"
)


_USED = (
    "SELECT coalesce(sum(CASE WHEN at >= :day THEN input_tokens + output_tokens ELSE 0 END),"
    " 0) AS day_tokens,"
    " coalesce(sum(CASE WHEN at >= :day THEN cost ELSE 0.0 END), 0.0) AS day_cost,"
    " coalesce(sum(input_tokens + output_tokens), 0) AS month_tokens,"
    " coalesce(sum(cost), 0.0) AS month_cost,"
    " (SELECT coalesce(max(id), 0) FROM usage) AS last_id"
    " FROM usage WHERE at >= :month AND id > :after"
)


def _used_sql(scope: Scope) -> tuple[str, dict[str, Any]]:
    """``_USED`` narrowed to ``scope``, with its parameters (the periods' and the first
    id's left to add)."""
    sql, params = [_USED], dict[str, Any]()
    for column in ("chat_key", "person", "platform"):
        value = getattr(scope, column)
        if value is not None:
            sql.append(f" AND {column} = :{column}")
            params[column] = value
    if scope.kinds is not None:
        names = [f"kind{n}" for n in range(len(scope.kinds))]
        sql.append(f" AND kind IN ({', '.join(':' + n for n in names)})")
        params.update(zip(names, scope.kinds, strict=True))
    return "".join(sql), params


def _where(scope: Scope) -> list[ColumnElement[bool]]:
    t = usage.c
    found: list[ColumnElement[bool]] = []
    if scope.chat_key is not None:
        found.append(t.chat_key == scope.chat_key)
    if scope.person is not None:
        found.append(t.person == scope.person)
    if scope.platform is not None:
        found.append(t.platform == scope.platform)
    if scope.kinds is not None:
        found.append(t.kind.in_(list(scope.kinds)))
    return found


class UsageStore:
    """See the module docstring."""

    def __init__(self, read: AsyncEngine, writer: Writer, reads: Reads) -> None:
        self._read = read
        self._writer = writer
        self._reads = reads

    def add(self, record: UsageRecord) -> asyncio.Future[None]:
        """Queue one model call's usage for the next commit; the future settles after it
        (or with the ``StoreError`` that kept the row out). Raises ``StoreError`` at once
        while the store is known not to write."""
        params = {name: getattr(record, name) for name in _COLUMNS}
        return self._writer.submit(lambda tx: tx.execute(_INSERT, params), later=True)

    async def used_after(
        self, scope: Scope, *, day_start: float, month_start: float, after_id: int = 0
    ) -> tuple[Used, int]:
        """What ``scope`` used since ``day_start`` and since ``month_start`` in the rows
        after ``after_id`` (0: all of them), and the newest row's id, read together (a
        read in one hand-over, ``core.store.reads``; ``core.usage.budgets`` keeps the
        running sums)."""
        sql, params = _used_sql(scope)
        params.update(day=day_start, month=month_start, after=after_id)
        row = (await self._reads.run(lambda tx: tx.fetch(sql, params)))[0]
        used = Used(
            int(row["day_tokens"]),
            float(row["day_cost"]),
            int(row["month_tokens"]),
            float(row["month_cost"]),
        )
        return used, int(row["last_id"])

    async def totals(
        self, scope: Scope, *, since: float, until: float | None = None, by: str | None = None
    ) -> list[Total]:
        """Sums of ``scope``'s rows in ``[since, until)``, grouped by ``by`` (a
        ``Dimension``), largest token count first."""
        t = usage.c
        where = [t.at >= since, *_where(scope)]
        if until is not None:
            where.append(t.at < until)
        key = usage.c[COLUMN_OF[by]] if by is not None else None
        sums: list[Any] = [
            func.count(),
            func.coalesce(func.sum(t.input_tokens), 0),
            func.coalesce(func.sum(t.output_tokens), 0),
            func.coalesce(func.sum(t.cache_read_tokens), 0),
            func.coalesce(func.sum(t.cache_write_tokens), 0),
            func.sum(t.cost),
        ]
        stmt = select(*([key] if key is not None else []), *sums).where(and_(*where))
        if key is not None:
            stmt = stmt.group_by(key).order_by((func.sum(t.input_tokens + t.output_tokens)).desc())
        async with self._read.connect() as conn:
            rows = (await conn.execute(stmt)).all()
        found = [_total(row, key is not None) for row in rows]
        return [total for total in found if total.calls]

    async def claim_notice(self, budget: str, period: str, at: float) -> bool:
        """True the first time anyone claims the notice of ``budget`` for ``period``."""
        token = secrets.token_hex(8)
        return await self._writer.run(lambda tx: _claim(tx, budget, period, token, at))


def _total(row: Any, keyed: bool) -> Total:
    values = list(row)
    key = values.pop(0) if keyed else None
    calls, tokens_in, tokens_out, read, write, cost = values
    return Total(
        None if key is None else str(key),
        int(calls),
        int(tokens_in),
        int(tokens_out),
        int(read),
        int(write),
        None if cost is None else float(cost),
    )


def _claim(tx: Tx, budget: str, period: str, token: str, at: float) -> bool:
    params = {"budget": budget, "period": period, "claim": token, "noticed_at": at}
    tx.execute(_CLAIM, params)
    held = tx.scalar(
        "SELECT claim FROM budget_notices WHERE budget = :budget AND period = :period", params
    )
    return bool(held == token)
