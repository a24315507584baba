"""Background review rows: the audit trail and the marks the review cadence counts from.

Writes are ``Tx`` functions (portable SQL, group-committed), reads take an
``AsyncConnection``; ``ReviewStore`` is the repository the review service and
``chatgate status`` use, holding the read engine and the writer.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from core.record import record
from core.store import prompts
from core.store.reads import Reads
from core.store.schema import reviews
from core.store.tx import Tx, insert_sql
from core.store.writer import Writer

_SCHEDULE = insert_sql(
    "reviews",
    ("session_id", "session_key", "kinds", "status", "at_message_count", "scheduled_at"),
    " RETURNING id",
)
# Only one process starts a review: a second (another replica resuming it) finds it taken.
_START = (
    "UPDATE reviews SET status = 'running', started_at = :at "
    "WHERE id = :id AND (status = 'scheduled' OR (status = 'running' AND :resume)) "
    "RETURNING id"
)
_FINISH = (
    "UPDATE reviews SET status = :status, finished_at = :at, iterations = :iterations, "
    "changes = :changes, transcript = :transcript, instruction_hash = :instruction_hash, "
    "error = :error, "
    "input_tokens = :input_tokens, output_tokens = :output_tokens, "
    "cache_read_tokens = :cache_read_tokens WHERE id = :id"
)


@record
class ReviewRow:
    id: int
    session_id: str
    session_key: str
    kinds: str
    status: str
    at_message_count: int
    scheduled_at: float
    finished_at: float | None = None
    iterations: int = 0
    changes: list[str] | None = None
    error: str | None = None


@record
class ReviewOutcome:
    status: str
    at: float
    iterations: int
    changes: list[str]
    transcript: list[dict[str, Any]]
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0


class ReviewStore:
    """Every read and write of ``reviews`` rows."""

    def __init__(self, read: AsyncEngine, writer: Writer, reads: Reads) -> None:
        self._read = read
        self._writer = writer
        self._reads = reads

    async def schedule(
        self, *, session_id: str, session_key: str, kinds: str, at_message_count: int, at: float
    ) -> int:
        """Record a review as ``scheduled``; its id."""
        return await self._writer.run(
            lambda tx: schedule(
                tx,
                session_id=session_id,
                session_key=session_key,
                kinds=kinds,
                at_message_count=at_message_count,
                at=at,
            )
        )

    async def start(self, review_id: int, at: float, *, resume: bool = False) -> bool:
        """Mark the review running; False when another process already started it
        (``resume`` also takes one left ``running`` by a process that stopped)."""
        return await self._writer.run(lambda tx: start(tx, review_id, at, resume=resume))

    async def finish(self, review_id: int, outcome: ReviewOutcome) -> None:
        """Record how the review ended, with its changes and transcript."""
        await self._writer.run(lambda tx: finish(tx, review_id, outcome))

    async def transcript(self, review_id: int) -> list[dict[str, Any]] | None:
        """What the review sent and got back (``transcript``)."""
        async with self._read.connect() as conn:
            return await transcript(conn, review_id)

    async def marks(self, session_id: str) -> dict[str, int]:
        """Per kind, the transcript length when the session's last review of it was
        scheduled."""
        return await self._reads.run(lambda tx: marks(tx, session_id))

    async def unfinished(self) -> list[ReviewRow]:
        """Reviews scheduled (or started) before a restart that never finished, oldest
        first."""
        async with self._read.connect() as conn:
            return await unfinished(conn)

    async def count_done(self) -> int:
        """How many reviews finished ``done``, over every session."""
        stmt = select(func.count()).select_from(reviews).where(reviews.c.status == "done")
        async with self._read.connect() as conn:
            return int((await conn.execute(stmt)).scalar_one())


def schedule(
    tx: Tx, *, session_id: str, session_key: str, kinds: str, at_message_count: int, at: float
) -> int:
    review_id: int = tx.scalar(
        _SCHEDULE,
        {
            "session_id": session_id,
            "session_key": session_key,
            "kinds": kinds,
            "status": "scheduled",
            "at_message_count": at_message_count,
            "scheduled_at": at,
        },
    )
    return review_id


def start(tx: Tx, review_id: int, at: float, *, resume: bool = False) -> bool:
    """Mark the review running; False when another process already started it.

    ``resume`` also takes a review left ``running`` by a process that stopped.
    """
    return bool(tx.fetch(_START, {"id": review_id, "at": at, "resume": resume}))


# Shorter first messages are kept where they are.
_SHARED_INSTRUCTION_CHARS = 256
_TRANSCRIPT = (
    "SELECT r.transcript, p.body AS instruction FROM reviews r "
    "LEFT JOIN prompts p ON p.hash = r.instruction_hash WHERE r.id = :id"
)


def _stored_transcript(
    tx: Tx, transcript: list[dict[str, Any]], at: float
) -> tuple[str, str | None]:
    """``transcript`` as stored: every review of a kind opens with the same long
    instruction, which goes once into ``prompts`` (its hash on the row) instead of into
    each row's JSON."""
    first = transcript[0] if transcript else {}
    content = first.get("content")
    if (
        first.get("role") != "user"
        or not isinstance(content, str)
        or len(content) < _SHARED_INSTRUCTION_CHARS
    ):
        return json.dumps(transcript, ensure_ascii=False), None
    rest = [{k: v for k, v in first.items() if k != "content"}, *transcript[1:]]
    return json.dumps(rest, ensure_ascii=False), prompts.put(tx, content, at)


def finish(tx: Tx, review_id: int, outcome: ReviewOutcome) -> None:
    transcript, instruction_hash = _stored_transcript(tx, outcome.transcript, outcome.at)
    tx.execute(
        _FINISH,
        {
            "id": review_id,
            "status": outcome.status,
            "at": outcome.at,
            "iterations": outcome.iterations,
            "changes": json.dumps(outcome.changes, ensure_ascii=False),
            "transcript": transcript,
            "instruction_hash": instruction_hash,
            "error": outcome.error,
            "input_tokens": outcome.input_tokens,
            "output_tokens": outcome.output_tokens,
            "cache_read_tokens": outcome.cache_read_tokens,
        },
    )


async def transcript(conn: AsyncConnection, review_id: int) -> list[dict[str, Any]] | None:
    """The review's transcript as it ran, its instruction back in place; None without
    one (a review that never finished)."""
    row = (await conn.execute(text(_TRANSCRIPT), {"id": review_id})).one_or_none()
    if row is None or row.transcript is None:
        return None
    raw = row.transcript
    messages: list[dict[str, Any]] = json.loads(raw) if isinstance(raw, str) else raw
    if row.instruction is not None and messages:
        messages[0] = {"role": "user", "content": row.instruction, **messages[0]}
    return messages


_MARKS = (
    "SELECT kinds, at_message_count FROM reviews WHERE session_id = :id ORDER BY id DESC LIMIT 50"
)


def marks(tx: Tx, session_id: str) -> dict[str, int]:
    """Per kind, the transcript length when the session's last review of it was scheduled
    (a read: ``core.store.reads``)."""
    found: dict[str, int] = {}
    for row in tx.fetch(_MARKS, {"id": session_id}):
        for kind in row["kinds"].split(","):
            found.setdefault(kind, row["at_message_count"])
    return found


async def unfinished(conn: AsyncConnection) -> list[ReviewRow]:
    """Reviews scheduled (or started) before a restart that never finished."""
    stmt = (
        select(reviews).where(reviews.c.status.in_(("scheduled", "running"))).order_by(reviews.c.id)
    )
    return [_row(r) for r in await conn.execute(stmt)]


async def for_session(conn: AsyncConnection, session_id: str) -> list[ReviewRow]:
    stmt = select(reviews).where(reviews.c.session_id == session_id).order_by(reviews.c.id)
    return [_row(r) for r in await conn.execute(stmt)]


def _row(r: Any) -> ReviewRow:
    changes = r.changes
    if isinstance(changes, str):
        changes = json.loads(changes)
    return ReviewRow(
        id=r.id,
        session_id=r.session_id,
        session_key=r.session_key,
        kinds=r.kinds,
        status=r.status,
        at_message_count=r.at_message_count,
        scheduled_at=r.scheduled_at,
        finished_at=r.finished_at,
        iterations=r.iterations,
        changes=changes,
        error=r.error,
    )
