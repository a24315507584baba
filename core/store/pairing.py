"""Pairing rows: people owners let in, codes waiting for an owner, wrong codes given.

Each decision that reads and then writes (open a request, approve a code) is one
group-committed transaction, so two messages or two owners at once cannot both pass a
limit. Codes are stored only as hashes (``core.pairing`` makes and hashes them).
"""

from __future__ import annotations

from typing import Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from core.record import record
from core.store.reads import Reads
from core.store.schema import paired_people, pairing_requests
from core.store.tx import Tx, insert_sql
from core.store.writer import Writer

_PAIRED = "SELECT 1 FROM paired_people WHERE platform = :platform AND user_id = :user_id"

Opened = Literal["opened", "too_soon", "full"]
Approval = Literal["approved", "unknown", "locked", "self"]

_INSERT_REQUEST = insert_sql(
    "pairing_requests",
    ("platform", "user_id", "user_name", "chat_id", "code_hash", "created_at", "expires_at"),
)
_INSERT_PERSON = insert_sql(
    "paired_people", ("platform", "user_id", "user_name", "approved_at", "approved_by")
) + (
    " ON CONFLICT (platform, user_id) DO UPDATE SET approved_at = excluded.approved_at, "
    "approved_by = excluded.approved_by"
)


@record
class PairingRequest:
    """A person waiting for an owner to approve their code."""

    platform: str
    user_id: str
    user_name: str | None
    chat_id: str
    code_hash: str
    created_at: float
    expires_at: float


@record
class PairedPerson:
    platform: str
    user_id: str
    user_name: str | None
    approved_at: float
    approved_by: str


@record
class Limits:
    """How many codes may wait per platform, how often one person may ask, and how many
    wrong codes in ``lock_seconds`` lock approval."""

    max_pending: int = 3
    min_interval_seconds: float = 600.0
    max_failures: int = 5
    lock_seconds: float = 3600.0


class PairingStore:
    """Every read and write of the pairing tables."""

    def __init__(self, read: AsyncEngine, writer: Writer, reads: Reads) -> None:
        self._read = read
        self._writer = writer
        self._reads = reads

    async def is_paired(self, platform: str, user_id: str) -> bool:
        """Whether an owner approved this person on this platform (asked for every
        message of a gated chat: a read in one hand-over, ``core.store.reads``)."""
        params = {"platform": platform, "user_id": user_id}
        return await self._reads.run(lambda tx: tx.scalar(_PAIRED, params) is not None)

    async def people(self, platform: str | None = None) -> list[PairedPerson]:
        """The people let in through pairing, oldest first."""
        stmt = select(paired_people).order_by(paired_people.c.approved_at)
        if platform is not None:
            stmt = stmt.where(paired_people.c.platform == platform)
        async with self._read.connect() as conn:
            return [PairedPerson(**dict(r._mapping)) for r in await conn.execute(stmt)]

    async def pending(self, now: float, platform: str | None = None) -> list[PairingRequest]:
        """Requests not yet approved nor expired, oldest first."""
        t = pairing_requests
        stmt = select(t).where(t.c.expires_at > now).order_by(t.c.created_at)
        if platform is not None:
            stmt = stmt.where(t.c.platform == platform)
        async with self._read.connect() as conn:
            rows = [dict(r._mapping) for r in await conn.execute(stmt)]
        return [PairingRequest(**{k: v for k, v in r.items() if k != "id"}) for r in rows]

    async def open_request(self, request: PairingRequest, limits: Limits) -> Opened:
        """Store ``request`` (replacing the person's older one) unless they asked less than
        ``min_interval_seconds`` ago or ``max_pending`` others are waiting."""
        return await self._writer.run(lambda tx: _open(tx, request, limits))

    async def approve(
        self, platform: str, code_hash: str, *, approver: str, now: float, limits: Limits
    ) -> tuple[Approval, PairingRequest | None]:
        """Let in the person whose waiting request has this code; ``approver`` names who
        approves (``platform:user_id``, or ``cli``)."""
        return await self._writer.run(
            lambda tx: _approve(tx, platform, code_hash, approver, now, limits)
        )

    async def revoke(self, platform: str, user_id: str) -> bool:
        """Take back a person's pairing (and drop any code they have waiting)."""
        return await self._writer.run(lambda tx: _revoke(tx, platform, user_id))


def _open(tx: Tx, request: PairingRequest, limits: Limits) -> Opened:
    now = request.created_at
    last = tx.scalar(
        "SELECT MAX(created_at) FROM pairing_requests WHERE platform = :platform "
        "AND user_id = :user_id AND expires_at > :now",
        {"platform": request.platform, "user_id": request.user_id, "now": now},
    )
    if last is not None and now - float(last) < limits.min_interval_seconds:
        return "too_soon"
    tx.execute(
        "DELETE FROM pairing_requests WHERE platform = :platform AND user_id = :user_id",
        {"platform": request.platform, "user_id": request.user_id},
    )
    waiting = tx.scalar(
        "SELECT COUNT(*) FROM pairing_requests WHERE platform = :platform AND expires_at > :now",
        {"platform": request.platform, "now": now},
    )
    if int(waiting or 0) >= limits.max_pending:
        return "full"
    tx.execute(_INSERT_REQUEST, _request_params(request))
    return "opened"


def _approve(
    tx: Tx, platform: str, code_hash: str, approver: str, now: float, limits: Limits
) -> tuple[Approval, PairingRequest | None]:
    failures = tx.scalar(
        "SELECT COUNT(*) FROM pairing_failures WHERE platform = :platform AND at > :since",
        {"platform": platform, "since": now - limits.lock_seconds},
    )
    if int(failures or 0) >= limits.max_failures:
        return "locked", None
    rows = tx.fetch(
        "SELECT platform, user_id, user_name, chat_id, code_hash, created_at, expires_at "
        "FROM pairing_requests WHERE platform = :platform AND code_hash = :code_hash "
        "AND expires_at > :now",
        {"platform": platform, "code_hash": code_hash, "now": now},
    )
    if not rows:
        tx.execute(
            "INSERT INTO pairing_failures (platform, at) VALUES (:platform, :at)",
            {"platform": platform, "at": now},
        )
        return "unknown", None
    request = PairingRequest(**rows[0])
    if approver == f"{platform}:{request.user_id}":
        return "self", request
    tx.execute(
        _INSERT_PERSON,
        {
            "platform": platform,
            "user_id": request.user_id,
            "user_name": request.user_name,
            "approved_at": now,
            "approved_by": approver,
        },
    )
    tx.execute(
        "DELETE FROM pairing_requests WHERE platform = :platform AND user_id = :user_id",
        {"platform": platform, "user_id": request.user_id},
    )
    return "approved", request


def _revoke(tx: Tx, platform: str, user_id: str) -> bool:
    params = {"platform": platform, "user_id": user_id}
    found = tx.fetch(
        "DELETE FROM paired_people WHERE platform = :platform AND user_id = :user_id "
        "RETURNING user_id",
        params,
    )
    tx.execute(
        "DELETE FROM pairing_requests WHERE platform = :platform AND user_id = :user_id", params
    )
    return bool(found)


def _request_params(request: PairingRequest) -> dict[str, object]:
    return {
        "platform": request.platform,
        "user_id": request.user_id,
        "user_name": request.user_name,
        "chat_id": request.chat_id,
        "code_hash": request.code_hash,
        "created_at": request.created_at,
        "expires_at": request.expires_at,
    }
