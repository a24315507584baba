"""Cron jobs and their runs in the SessionDB (``cron_jobs``, ``cron_runs``).

Jobs live in the database, not a JSON file, so several replicas see one list and a due
job is claimed with a compare-and-set on ``next_run_at``: only the replica whose UPDATE
changed the row runs it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import Any, Literal

from sqlalchemy import ColumnElement, and_, func, select, true
from sqlalchemy.ext.asyncio import AsyncEngine

from core.messages import ChatTarget
from core.record import record
from core.store.schema import cron_jobs, cron_runs
from core.store.tx import Tx, insert_sql
from core.store.writer import Writer

RunStatus = Literal["running", "ok", "silent", "failed", "refused", "skipped"]
CreatedBy = Literal["model", "cli"]


@record
class CronJob:
    """One scheduled prompt. ``next_run_at`` is None once a one-shot job has run."""

    id: str
    name: str
    prompt: str
    schedule: str
    deliver: str
    created_by: CreatedBy
    created_at: float
    updated_at: float
    skills: tuple[str, ...] = ()
    origin_platform: str | None = None
    origin_route: str | None = None
    origin_chat_id: str | None = None
    origin_thread_id: str | None = None
    origin_user_id: str | None = None
    paused: bool = False
    next_run_at: float | None = None
    last_run_at: float | None = None
    last_status: str | None = None
    last_error: str | None = None
    run_count: int = 0

    @property
    def origin(self) -> ChatTarget | None:
        """The chat that created the job, if a chat did."""
        if self.origin_platform is None or self.origin_chat_id is None:
            return None
        return ChatTarget(
            self.origin_platform, self.origin_chat_id, self.origin_thread_id, self.origin_route
        )


@record
class CronRun:
    """One run (or skipped run) of a job."""

    id: int
    job_id: str
    status: str
    started_at: float
    scheduled_for: float | None = None
    finished_at: float | None = None
    session_id: str | None = None
    output: str | None = None
    delivered_to: str | None = None
    error: str | None = None


@record
class RunEnd:
    """How a run ended, written onto its row and its job in one transaction."""

    status: RunStatus
    finished_at: float
    session_id: str | None = None
    output: str | None = None
    delivered_to: str | None = None
    error: str | None = None


_JOB_COLUMNS = tuple(c.name for c in cron_jobs.columns)
_EDITABLE = frozenset({"name", "prompt", "schedule", "skills", "deliver", "paused", "next_run_at"})
_CLAIM = (
    "UPDATE cron_jobs SET next_run_at = :new WHERE id = :id AND next_run_at = :expected "
    "AND paused = :paused RETURNING id"
)
_RUN_COLUMNS = ("job_id", "scheduled_for", "started_at", "finished_at", "status", "error")
_ADD_RUN = insert_sql("cron_runs", _RUN_COLUMNS, " RETURNING id")
_REQUEUE = (
    "UPDATE cron_jobs SET next_run_at = :due "
    "WHERE id = :id AND (next_run_at IS NULL OR next_run_at > :due)"
)
_RUNNING = "SELECT id, job_id, scheduled_for FROM cron_runs WHERE status = 'running'"
_FINISH_RUN = (
    "UPDATE cron_runs SET status = :status, finished_at = :finished_at, "
    "session_id = :session_id, output = :output, delivered_to = :delivered_to, "
    "error = :error WHERE id = :id"
)
_FINISH_JOB = (
    "UPDATE cron_jobs SET last_run_at = :at, last_status = :status, last_error = :error, "
    "run_count = run_count + :ran WHERE id = :id"
)


class CronStore:
    """Every read and write of cron state; the service, the tool and the CLI share it."""

    def __init__(self, read: AsyncEngine, writer: Writer) -> None:
        self._read = read
        self._writer = writer

    # -- jobs --------------------------------------------------------------------------

    async def add(self, job: CronJob) -> CronJob:
        row = _to_row(job)
        await self._writer.run(lambda tx: tx.execute(insert_sql("cron_jobs", list(row)), row))
        return job

    async def get(self, job_id: str) -> CronJob | None:
        jobs = await self._select(cron_jobs.c.id == job_id)
        return jobs[0] if jobs else None

    async def jobs(self, origin: ChatTarget | None = None) -> list[CronJob]:
        """Every job, or only those created in the chat ``origin``; oldest first."""
        return await self._select(*(_origin_filter(origin) if origin else ()))

    async def count(self, origin: ChatTarget) -> int:
        query = select(func.count()).select_from(cron_jobs).where(*_origin_filter(origin))
        async with self._read.connect() as conn:
            return int((await conn.execute(query)).scalar_one())

    async def update(self, job_id: str, changes: Mapping[str, Any], at: float) -> bool:
        """Change the named fields; False when the job does not exist."""
        unknown = set(changes) - _EDITABLE
        if unknown:
            raise ValueError(f"cron job fields cannot be changed: {sorted(unknown)}")
        params = {k: _column_value(k, v) for k, v in changes.items()} | {
            "updated_at": at,
            "id": job_id,
        }
        sets = ", ".join(f"{k} = :{k}" for k in params if k != "id")
        sql = f"UPDATE cron_jobs SET {sets} WHERE id = :id RETURNING id"
        return bool(await self._writer.run(lambda tx: tx.fetch(sql, params)))

    async def remove(self, job_id: str) -> bool:
        """Delete a job and its run history; False when it did not exist."""

        def op(tx: Tx) -> bool:
            gone = tx.fetch("DELETE FROM cron_jobs WHERE id = :id RETURNING id", {"id": job_id})
            tx.execute("DELETE FROM cron_runs WHERE job_id = :id", {"id": job_id})
            return bool(gone)

        return await self._writer.run(op)

    async def due(self, now: float) -> list[CronJob]:
        """Jobs not paused whose next run is at or before ``now``, earliest first."""
        return await self._select(
            cron_jobs.c.paused.is_(False),
            cron_jobs.c.next_run_at.is_not(None),
            cron_jobs.c.next_run_at <= now,
            order=cron_jobs.c.next_run_at,
        )

    async def next_runs(self, limit: int = 10) -> list[CronJob]:
        """The jobs that run next (not paused, not finished), soonest first; for status."""
        return await self._select(
            cron_jobs.c.paused.is_(False),
            cron_jobs.c.next_run_at.is_not(None),
            order=cron_jobs.c.next_run_at,
            limit=limit,
        )

    async def referenced_skills(self) -> set[str]:
        """Every skill any job names, paused or not: the Curator treats them as pinned."""
        async with self._read.connect() as conn:
            rows = (await conn.execute(select(cron_jobs.c.skills))).scalars().all()
        return {name for value in rows for name in _skills(value)}

    # -- runs ----------------------------------------------------------------------------

    async def claim(
        self, job: CronJob, new_next: float | None, *, instead: RunEnd | None = None
    ) -> bool:
        """Move a due job's ``next_run_at`` from the value read to ``new_next``.

        True only for the caller whose UPDATE changed the row. With ``instead`` the due run
        is not made: it is recorded as ``instead`` says (skipped, or failed) in the same
        transaction.
        """
        params = {"id": job.id, "expected": job.next_run_at, "new": new_next, "paused": False}

        def op(tx: Tx) -> bool:
            if not tx.fetch(_CLAIM, params):
                return False
            if instead is not None:
                run_id = _insert_run(tx, job.id, job.next_run_at, instead.finished_at, "running")
                _finish(tx, run_id, job.id, instead, ran=0)
            return True

        return await self._writer.run(op)

    async def claim_run(self, job: CronJob, new_next: float | None, at: float) -> int | None:
        """Claim a due run and record it as running, in one transaction; its run id, or
        None when another replica claimed it first."""
        params = {"id": job.id, "expected": job.next_run_at, "new": new_next, "paused": False}

        def op(tx: Tx) -> int | None:
            if not tx.fetch(_CLAIM, params):
                return None
            return _insert_run(tx, job.id, job.next_run_at, at, "running")

        return await self._writer.run(op)

    async def interrupt(self, run_id: int, job_id: str, end: RunEnd, due: float | None) -> None:
        """Record a run cut off by a shutdown and put it back on the schedule at ``due``."""

        def op(tx: Tx) -> None:
            _finish(tx, run_id, job_id, end, ran=0)
            if due is not None:
                tx.execute(_REQUEUE, {"id": job_id, "due": due})

        await self._writer.run(op)

    async def recover_interrupted(self, at: float) -> int:
        """Runs left ``running`` by a crash: record them failed and requeue them."""
        end = RunEnd("failed", at, error="interrupted: the gateway stopped during the run")

        def op(tx: Tx) -> int:
            rows = tx.fetch(_RUNNING, {})
            for row in rows:
                _finish(tx, row["id"], row["job_id"], end, ran=0)
                if row["scheduled_for"] is not None:
                    tx.execute(_REQUEUE, {"id": row["job_id"], "due": row["scheduled_for"]})
            return len(rows)

        return await self._writer.run(op)

    async def finish_run(self, run_id: int, job_id: str, end: RunEnd) -> None:
        await self._writer.run(lambda tx: _finish(tx, run_id, job_id, end, ran=1))

    async def runs(self, job_id: str, limit: int = 20) -> list[CronRun]:
        """A job's latest runs, newest first."""
        query = (
            select(cron_runs)
            .where(cron_runs.c.job_id == job_id)
            .order_by(cron_runs.c.id.desc())
            .limit(limit)
        )
        async with self._read.connect() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [CronRun(**dict(row)) for row in rows]

    async def _select(
        self, *where: ColumnElement[bool], order: Any = None, limit: int | None = None
    ) -> list[CronJob]:
        query = select(cron_jobs).where(and_(true(), *where))
        query = query.order_by(order if order is not None else cron_jobs.c.created_at)
        query = query.order_by(cron_jobs.c.id)
        if limit is not None:
            query = query.limit(limit)
        async with self._read.connect() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [_to_job(dict(row)) for row in rows]


def _insert_run(
    tx: Tx, job_id: str, scheduled_for: float | None, at: float, status: RunStatus
) -> int:
    row = {
        "job_id": job_id,
        "scheduled_for": scheduled_for,
        "started_at": at,
        "finished_at": None,
        "status": status,
        "error": None,
    }
    return int(tx.scalar(_ADD_RUN, row))


def _finish(tx: Tx, run_id: int, job_id: str, end: RunEnd, *, ran: int) -> None:
    run = asdict(end)
    tx.execute(_FINISH_RUN, run | {"id": run_id})
    job = {"id": job_id, "at": end.finished_at, "status": end.status, "error": end.error}
    tx.execute(_FINISH_JOB, job | {"ran": ran})


def _origin_filter(origin: ChatTarget) -> list[ColumnElement[bool]]:
    def same(column: Any, value: str | None) -> ColumnElement[bool]:
        return column.is_(None) if value is None else column == value  # type: ignore[no-any-return]

    return [
        same(cron_jobs.c.origin_platform, origin.platform),
        same(cron_jobs.c.origin_chat_id, origin.chat_id),
        same(cron_jobs.c.origin_thread_id, origin.thread_id),
        same(cron_jobs.c.origin_route, origin.route),
    ]


def _column_value(name: str, value: Any) -> Any:
    if name == "skills":
        return json.dumps(list(value))
    return value


def _to_row(job: CronJob) -> dict[str, Any]:
    row = {name: getattr(job, name) for name in _JOB_COLUMNS}
    row["skills"] = json.dumps(list(job.skills))
    return row


def _skills(value: object) -> Iterable[str]:
    if isinstance(value, str):  # JSON text when a driver hands the column back unparsed
        value = json.loads(value)
    if isinstance(value, list):
        return (str(item) for item in value)
    return ()


def _to_job(row: Mapping[str, Any]) -> CronJob:
    values = dict(row)
    values["skills"] = tuple(_skills(values.get("skills")))
    values["paused"] = bool(values.get("paused"))
    return CronJob(**values)
