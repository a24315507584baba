"""Approval rows: tool calls waiting for a person's decision, and session grants.

Pausing a turn is one transaction: the approval (with the turn's work so far), the
prompt reply with its buttons, and giving back the turn's start (``inbox.release``: a
turn waiting for a person is not in flight, so a restart then is no crash). A decision
is one conditional update, so two people (or a person and the timeout) cannot both
decide; "for this session" adds a grant in the same transaction.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from core.media.refs import refs_from_json
from core.messages import ChatTarget, OutboundMessage, ReplyAction
from core.record import record
from core.store import inbox as inbox_ops
from core.store import outbox as outbox_ops
from core.store.records import (
    Approval,
    ApprovalScope,
    ApprovalStatus,
    InboxItem,
    NewMessage,
)
from core.store.schema import approval_grants, approvals
from core.store.text import scrub_row
from core.store.tx import Tx, insert_sql
from core.store.writer import Writer

# What the prompt says and offers, once the approval's id is known.
PromptFor = Callable[[int], tuple[str, Sequence[ReplyAction]]]

_COLUMNS = (
    "inbox_id",
    "session_id",
    "session_key",
    "platform",
    "route",
    "chat_id",
    "thread_id",
    "tool_call_id",
    "tool_name",
    "arguments",
    "turn_messages",
    "status",
    "created_at",
)
_ADD = insert_sql("approvals", _COLUMNS, " RETURNING id")
_PROMPTED = "UPDATE approvals SET prompt_outbox_id = :outbox_id WHERE id = :id"
_DECIDE = (
    "UPDATE approvals SET status = :status, scope = :scope, decided_by = :by, "
    "decided_at = :at WHERE id = :id AND status = 'pending' RETURNING id"
)
_GRANT = insert_sql("approval_grants", ("session_id", "tool_name", "granted_by", "granted_at")) + (
    " ON CONFLICT (session_id, tool_name) DO NOTHING"
)
_BY_ID = "SELECT * FROM approvals WHERE id = :id"


@record
class AskedCall:
    """The tool call a turn pauses on, and the turn's work so far."""

    item: InboxItem
    session_id: str
    tool_call_id: str
    tool_name: str
    arguments: str
    turn_messages: Sequence[NewMessage]
    created_at: float


@record
class Verdict:
    """A decision to record: ``expired`` when no one answered in time."""

    approval_id: int
    status: ApprovalStatus
    at: float
    by: str | None = None
    scope: ApprovalScope | None = None
    # A line for the approval's chat (a decision made outside it, or the timeout).
    notice: str | None = None


class ApprovalStore:
    """Every read and write of the approval tables."""

    def __init__(self, read: AsyncEngine, writer: Writer) -> None:
        self._read = read
        self._writer = writer

    async def pause(self, asked: AskedCall, prompt: PromptFor) -> tuple[Approval, OutboundMessage]:
        """Record ``asked`` as pending and queue its prompt, in one transaction."""
        return await self._writer.run(lambda tx: _pause(tx, asked, prompt))

    async def decide(self, verdict: Verdict) -> tuple[Approval | None, list[OutboundMessage]]:
        """Record ``verdict`` if the approval is still pending: the approval as decided
        (None when it was not pending) and the notice queued, if any."""
        return await self._writer.run(lambda tx: _decide(tx, verdict))

    async def get(self, approval_id: int) -> Approval | None:
        return await self._one(select(approvals).where(approvals.c.id == approval_id))

    async def for_call(self, inbox_id: int, tool_call_id: str) -> Approval | None:
        """The newest approval asked for this call of this inbox item's turn."""
        stmt = (
            select(approvals)
            .where(approvals.c.inbox_id == inbox_id, approvals.c.tool_call_id == tool_call_id)
            .order_by(approvals.c.id.desc())
            .limit(1)
        )
        return await self._one(stmt)

    async def latest_for_inbox(self, inbox_id: int) -> Approval | None:
        """The newest approval this inbox item's turn asked for (what it resumes from)."""
        stmt = (
            select(approvals)
            .where(approvals.c.inbox_id == inbox_id)
            .order_by(approvals.c.id.desc())
            .limit(1)
        )
        return await self._one(stmt)

    async def pending_in_chat(self, target: ChatTarget) -> list[Approval]:
        """The chat's pending approvals, oldest first."""
        stmt = (
            select(approvals)
            .where(
                approvals.c.platform == target.platform,
                approvals.c.chat_id == target.chat_id,
                _route_is(target.route),
                approvals.c.status == "pending",
            )
            .order_by(approvals.c.id)
        )
        async with self._read.connect() as conn:
            return [approval_from_row(r._mapping) for r in await conn.execute(stmt)]

    async def granted(self, session_id: str, tool_name: str) -> bool:
        """Whether ``tool_name`` was approved for the rest of ``session_id``."""
        stmt = select(approval_grants.c.tool_name).where(
            approval_grants.c.session_id == session_id, approval_grants.c.tool_name == tool_name
        )
        async with self._read.connect() as conn:
            return (await conn.execute(stmt)).first() is not None

    async def count_pending(self) -> int:
        """Approvals waiting for a decision, in every chat (``chatgate status``)."""
        stmt = select(func.count()).select_from(approvals).where(approvals.c.status == "pending")
        async with self._read.connect() as conn:
            return int((await conn.execute(stmt)).scalar_one())

    async def _one(self, stmt: Any) -> Approval | None:
        async with self._read.connect() as conn:
            row = (await conn.execute(stmt)).first()
        return approval_from_row(row._mapping) if row is not None else None


def _route_is(route: str | None) -> Any:
    return approvals.c.route == route if route is not None else approvals.c.route.is_(None)


def _pause(tx: Tx, asked: AskedCall, prompt: PromptFor) -> tuple[Approval, OutboundMessage]:
    msg = asked.item.message
    row = scrub_row(
        {
            "inbox_id": asked.item.id,
            "session_id": asked.session_id,
            "session_key": asked.item.session_key,
            "platform": msg.platform,
            "route": msg.route,
            "chat_id": msg.chat_id,
            "thread_id": msg.thread_id,
            "tool_call_id": asked.tool_call_id,
            "tool_name": asked.tool_name,
            "arguments": asked.arguments,
            "turn_messages": json.dumps([_message_json(m) for m in asked.turn_messages]),
            "status": "pending",
            "created_at": asked.created_at,
        }
    )
    approval_id = int(tx.scalar(_ADD, row))
    text, actions = prompt(approval_id)
    reply = outbox_ops.add_prompt(tx, asked.item, asked.session_id, text, actions, asked.created_at)
    tx.execute(_PROMPTED, {"id": approval_id, "outbox_id": reply.id})
    inbox_ops.release(tx, [asked.item.id])
    stored = approval_from_row({**row, "id": approval_id, "prompt_outbox_id": reply.id})
    return stored, reply


def _decide(tx: Tx, verdict: Verdict) -> tuple[Approval | None, list[OutboundMessage]]:
    params = {
        "id": verdict.approval_id,
        "status": verdict.status,
        "scope": verdict.scope,
        "by": verdict.by,
        "at": verdict.at,
    }
    if tx.scalar(_DECIDE, params) is None:
        return None, []
    decided = approval_from_row(tx.fetch(_BY_ID, {"id": verdict.approval_id})[0])
    if verdict.status == "approved" and verdict.scope == "session":
        grant = {
            "session_id": decided.session_id,
            "tool_name": decided.tool_name,
            "granted_by": verdict.by or "",
            "granted_at": verdict.at,
        }
        tx.execute(_GRANT, grant)
    notices: list[OutboundMessage] = []
    if verdict.notice is not None:
        notices = outbox_ops.add_notices(
            tx, decided.target, decided.session_id, [verdict.notice], verdict.at
        )
    return decided, notices


def approval_from_row(row: Mapping[Any, Any]) -> Approval:
    raw = row["turn_messages"]
    stored: list[dict[str, Any]] = (json.loads(raw) if isinstance(raw, str) else raw) or []
    return Approval(
        id=int(row["id"]),
        inbox_id=int(row["inbox_id"]),
        session_id=row["session_id"],
        session_key=row["session_key"],
        target=ChatTarget(row["platform"], row["chat_id"], row["thread_id"], row["route"]),
        tool_call_id=row["tool_call_id"],
        tool_name=row["tool_name"],
        arguments=row["arguments"],
        status=row["status"],
        created_at=row["created_at"],
        turn_messages=tuple(_message_from_json(m) for m in stored),
        scope=row.get("scope"),
        decided_by=row.get("decided_by"),
        decided_at=row.get("decided_at"),
        prompt_outbox_id=row.get("prompt_outbox_id"),
    )


def _message_json(message: NewMessage) -> dict[str, Any]:
    data = dataclasses.asdict(message)
    data["media"] = [ref.to_json() for ref in message.media]
    return data


def _message_from_json(data: dict[str, Any]) -> NewMessage:
    return NewMessage(**{**data, "media": refs_from_json(data.get("media"))})
