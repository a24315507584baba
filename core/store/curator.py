"""SessionDB operations of the skills curator: its run log, its scheduler flags, its inputs.

Writes are ``Tx`` functions (portable SQL, group-committed); reads take an
``AsyncConnection``. The curator reads two things it does not own: the newest inbox row
(the last time anyone wrote to the agent, in any chat) and the skills cron jobs attach.
``CuratorStore`` is the repository the curator uses, holding the read engine and the
writer; the readings it takes together share one connection.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from core.record import record
from core.store.schema import cron_jobs, curator_runs, inbox, scheduler_state
from core.store.tx import Tx, insert_sql
from core.store.writer import Writer

ARMED_AT = "curator.armed_at"
PAUSED = "curator.paused"
CLAIMED_AT = "curator.claimed_at"
# A compare-and-set on the claim time: of replicas checking at once, one wins the pass.
# (PostgreSQL re-checks the WHERE of a concurrent UPDATE after the first one commits.)
_CLAIM = (
    "UPDATE scheduler_state SET value = :value, updated_at = :at "
    "WHERE key = :key AND CAST(value AS DOUBLE PRECISION) < :since RETURNING key"
)

_START = insert_sql(
    "curator_runs",
    ("started_at", "trigger", "dry_run", "consolidate", "status"),
    " RETURNING id",
)
_FINISH = (
    "UPDATE curator_runs SET finished_at = :finished_at, status = :status, "
    "backup_id = :backup_id, counts = :counts, report = :report, error = :error WHERE id = :id"
)
_SET_STATE = (
    "INSERT INTO scheduler_state (key, value, updated_at) VALUES (:key, :value, :at) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
)
_SET_STATE_IF_ABSENT = (
    "INSERT INTO scheduler_state (key, value, updated_at) VALUES (:key, :value, :at) "
    "ON CONFLICT (key) DO NOTHING"
)


@record
class CuratorRun:
    id: int
    started_at: float
    finished_at: float | None
    trigger: str
    dry_run: bool
    consolidate: bool
    status: str
    backup_id: str | None
    counts: dict[str, Any]
    error: str | None


@record
class GateReadings:
    """What the curator's gates are decided from, read at one moment."""

    paused: bool
    armed_at: str | None  # repr() of the unix time the first check armed the curator
    last_real_run: CuratorRun | None
    last_activity: float | None


@record
class RunLog:
    """The run log as ``chatgate curator status`` summarises it, read at one moment."""

    paused: bool
    runs: int
    dry_runs: int
    last_run: CuratorRun | None
    last_activity: float | None


class CuratorStore:
    """Every read and write of the curator's run log and scheduler flags."""

    def __init__(self, read: AsyncEngine, writer: Writer) -> None:
        self._read = read
        self._writer = writer

    async def gate_readings(self) -> GateReadings:
        """The pause flag, the arming time, the last real pass and the last activity."""
        async with self._read.connect() as conn:
            paused = await get_state(conn, PAUSED) == "1"
            armed = await get_state(conn, ARMED_AT)
            last = await last_real_run(conn)
            active_at = await last_activity(conn)
        return GateReadings(paused, armed, last, active_at)

    async def run_log(self) -> RunLog:
        """The pause flag, the counts of real and dry passes, the newest pass and the
        last activity."""
        async with self._read.connect() as conn:
            paused = await get_state(conn, PAUSED) == "1"
            runs = await count_runs(conn, dry_run=False)
            dry_runs = await count_runs(conn, dry_run=True)
            recent = await recent_runs(conn, limit=1)
            active_at = await last_activity(conn)
        return RunLog(paused, runs, dry_runs, recent[0] if recent else None, active_at)

    async def cron_skill_names(self) -> set[str]:
        """Every skill any cron job attaches, paused jobs included."""
        async with self._read.connect() as conn:
            return await cron_skill_names(conn)

    async def arm(self, at: float) -> str:
        """Arm the curator at ``at`` unless it is armed; the arming time stored now."""
        return await self._writer.run(lambda tx: set_state_if_absent(tx, ARMED_AT, repr(at), at))

    async def set_paused(self, paused: bool, at: float) -> None:
        """Pause or resume scheduled passes."""
        value = "1" if paused else "0"
        await self._writer.run(lambda tx: set_state(tx, PAUSED, value, at))

    async def claim_pass(self, at: float, since: float) -> bool:
        """Claim the scheduled pass unless a replica claimed one after ``since``."""
        return await self._writer.run(lambda tx: claim_pass(tx, at, since))

    async def start_run(self, at: float, trigger: str, dry_run: bool, consolidate: bool) -> int:
        """Record a pass as ``running``; its run id."""
        return await self._writer.run(lambda tx: start_run(tx, at, trigger, dry_run, consolidate))

    async def finish_run(
        self,
        run_id: int,
        *,
        at: float,
        status: str,
        backup_id: str | None,
        counts: Mapping[str, Any],
        report: str,
        error: str | None = None,
    ) -> None:
        """Record how a pass ended: its status, snapshot, counts, report and error."""
        await self._writer.run(
            lambda tx: finish_run(
                tx,
                run_id,
                at=at,
                status=status,
                backup_id=backup_id,
                counts=counts,
                report=report,
                error=error,
            )
        )


# -- writes ---------------------------------------------------------------------------


def start_run(tx: Tx, at: float, trigger: str, dry_run: bool, consolidate: bool) -> int:
    params = {
        "started_at": at,
        "trigger": trigger,
        "dry_run": dry_run,
        "consolidate": consolidate,
        "status": "running",
    }
    return int(tx.scalar(_START, params))


def finish_run(
    tx: Tx,
    run_id: int,
    *,
    at: float,
    status: str,
    backup_id: str | None,
    counts: Mapping[str, Any],
    report: str,
    error: str | None = None,
) -> None:
    tx.execute(
        _FINISH,
        {
            "id": run_id,
            "finished_at": at,
            "status": status,
            "backup_id": backup_id,
            "counts": json.dumps(dict(counts)),
            "report": report,
            "error": error,
        },
    )


def set_state(tx: Tx, key: str, value: str, at: float) -> None:
    tx.execute(_SET_STATE, {"key": key, "value": value, "at": at})


def set_state_if_absent(tx: Tx, key: str, value: str, at: float) -> str:
    """Store ``value`` unless ``key`` has one; return the value that is stored now."""
    tx.execute(_SET_STATE_IF_ABSENT, {"key": key, "value": value, "at": at})
    return str(tx.scalar("SELECT value FROM scheduler_state WHERE key = :key", {"key": key}))


def claim_pass(tx: Tx, at: float, since: float) -> bool:
    """Claim the scheduled pass unless one was claimed after ``since``."""
    tx.execute(_SET_STATE_IF_ABSENT, {"key": CLAIMED_AT, "value": "0", "at": at})
    return bool(tx.fetch(_CLAIM, {"key": CLAIMED_AT, "value": repr(at), "at": at, "since": since}))


# -- reads ----------------------------------------------------------------------------


async def get_state(conn: AsyncConnection, key: str) -> str | None:
    query = select(scheduler_state.c.value).where(scheduler_state.c.key == key)
    value = (await conn.execute(query)).scalar()
    return None if value is None else str(value)


async def last_activity(conn: AsyncConnection) -> float | None:
    """When the newest inbound message arrived, in any chat (cheap: by primary key)."""
    query = select(inbox.c.received_at).order_by(inbox.c.id.desc()).limit(1)
    value = (await conn.execute(query)).scalar()
    return None if value is None else float(value)


async def cron_skill_names(conn: AsyncConnection) -> set[str]:
    """Every skill any cron job attaches, paused jobs included."""
    names: set[str] = set()
    for (skills,) in await conn.execute(select(cron_jobs.c.skills)):
        value = json.loads(skills) if isinstance(skills, str) else skills
        if isinstance(value, list):
            names.update(item for item in value if isinstance(item, str))
    return names


async def last_real_run(conn: AsyncConnection) -> CuratorRun | None:
    """The newest pass that was not a dry run, whatever its outcome."""
    query = (
        select(curator_runs)
        .where(curator_runs.c.dry_run.is_(False))
        .order_by(curator_runs.c.id.desc())
        .limit(1)
    )
    row = (await conn.execute(query)).mappings().first()
    return None if row is None else _run(row)


async def recent_runs(conn: AsyncConnection, limit: int = 10) -> list[CuratorRun]:
    query = select(curator_runs).order_by(curator_runs.c.id.desc()).limit(limit)
    return [_run(row) for row in (await conn.execute(query)).mappings()]


async def run_report(conn: AsyncConnection, run_id: int) -> str | None:
    query = select(curator_runs.c.report).where(curator_runs.c.id == run_id)
    value = (await conn.execute(query)).scalar()
    return None if value is None else str(value)


async def count_runs(conn: AsyncConnection, *, dry_run: bool) -> int:
    query = select(func.count()).select_from(curator_runs)
    query = query.where(curator_runs.c.dry_run.is_(dry_run))
    return int((await conn.execute(query)).scalar() or 0)


def _run(row: Mapping[Any, Any]) -> CuratorRun:
    counts = row["counts"]
    if isinstance(counts, str):
        counts = json.loads(counts)
    return CuratorRun(
        id=int(row["id"]),
        started_at=float(row["started_at"]),
        finished_at=row["finished_at"],
        trigger=str(row["trigger"]),
        dry_run=bool(row["dry_run"]),
        consolidate=bool(row["consolidate"]),
        status=str(row["status"]),
        backup_id=row["backup_id"],
        counts=counts if isinstance(counts, dict) else {},
        error=row["error"],
    )
