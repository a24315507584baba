"""Session operations: one active session per key, ended by /new, never rewritten."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from core.media.refs import refs_from_json
from core.store import prompts
from core.store.records import SessionRow, StoredMessage
from core.store.schema import messages, sessions
from core.store.text import scrub_row
from core.store.tx import Tx, insert_sql

_FIELDS = tuple(f.name for f in dataclasses.fields(SessionRow))
# ``system_prompt`` and ``tool_specs`` live in ``prompts``; the row points at them.
_STORED = ("system_prompt", "tool_specs")
_COLUMNS = (
    *(f for f in _FIELDS if f not in _STORED),
    "prompt_hash",
    "prompt_id_at",
    "tools_hash",
)
_OPEN = insert_sql("sessions", _COLUMNS, " ON CONFLICT DO NOTHING")
_ACTIVE = f"{prompts.SESSION_SQL} WHERE s.session_key = :key AND s.ended_at IS NULL"
_BY_ID = text(f"{prompts.SESSION_SQL} WHERE s.id = :id")
_RECENT = text(f"{prompts.SESSION_SQL} ORDER BY s.last_active_at DESC LIMIT :limit")
_END = (
    "UPDATE sessions SET ended_at = :at, end_reason = :reason WHERE id = :id AND ended_at IS NULL"
)


def open_session(tx: Tx, new: SessionRow) -> SessionRow:
    """Insert ``new`` as the active session of its key, or return the one already active.

    The partial unique index on active keys decides races between replicas.
    """
    row = scrub_row(dataclasses.asdict(new))
    row["prompt_tiers"] = json.dumps(new.prompt_tiers) if new.prompt_tiers is not None else None
    stored = {name: row.pop(name) for name in _STORED}
    at = new.started_at
    row.update(prompts.columns(tx, new.id, stored["system_prompt"], stored["tool_specs"], at))
    tx.execute(_OPEN, row)
    current = tx.fetch(_ACTIVE, {"key": new.session_key})
    return session_from_row(current[0])


_FREEZE_TOOLS = "UPDATE sessions SET tools_hash = :hash WHERE id = :id AND tools_hash IS NULL"
_TOOLS = "SELECT t.body FROM sessions s JOIN prompts t ON t.hash = s.tools_hash WHERE s.id = :id"


def freeze_tools(tx: Tx, session_id: str, specs: str) -> str:
    """Store ``specs`` as the session's tool list unless it has one; return the one it has.

    Once set, a session's list is never rewritten: a replica that froze it first wins.
    """
    # Only sessions opened before tool lists were frozen get here: no time to record.
    tx.execute(_FREEZE_TOOLS, {"id": session_id, "hash": prompts.put(tx, specs, 0.0)})
    stored = tx.scalar(_TOOLS, {"id": session_id})
    return str(stored) if stored is not None else specs


def end(tx: Tx, session_id: str, reason: str, at: float) -> None:
    tx.execute(_END, {"id": session_id, "reason": reason, "at": at})


def active(tx: Tx, key: str) -> SessionRow | None:
    """The session currently open for ``key``, if any (a read: ``core.store.reads``)."""
    rows = tx.fetch(_ACTIVE, {"key": key})
    return session_from_row(rows[0]) if rows else None


async def get(conn: AsyncConnection, session_id: str) -> SessionRow | None:
    row = (await conn.execute(_BY_ID, {"id": session_id})).one_or_none()
    return session_from_row(row._mapping) if row is not None else None


_HISTORY = (
    "SELECT id, role, content, api_content, tool_calls, tool_call_id, tool_name, media,"
    " user_id FROM messages WHERE session_id = :id ORDER BY id"
)


def history(tx: Tx, session_id: str) -> list[StoredMessage]:
    """The session's transcript in order, as the model will see it again (a read:
    ``core.store.reads``). JSON columns arrive as text from either database."""
    return [
        StoredMessage(
            id=r["id"],
            role=r["role"],
            content=r["content"],
            api_content=r["api_content"],
            tool_calls=_json(r["tool_calls"]),
            tool_call_id=r["tool_call_id"],
            tool_name=r["tool_name"],
            media=refs_from_json(r["media"]) if r["media"] else (),
            user_id=r["user_id"],
        )
        for r in tx.fetch(_HISTORY, {"id": session_id})
    ]


def _json(stored: Any) -> Any:
    return json.loads(stored) if isinstance(stored, str) else stored


async def tool_results(conn: AsyncConnection, session_id: str, tool_name: str) -> list[str | None]:
    """The results of every call of ``tool_name`` in the session, oldest first."""
    rows = await conn.execute(
        select(messages.c.content)
        .where(
            messages.c.session_id == session_id,
            messages.c.role == "tool",
            messages.c.tool_name == tool_name,
        )
        .order_by(messages.c.id)
    )
    return [r.content for r in rows]


async def count_active(conn: AsyncConnection) -> int:
    """How many sessions are open (not ended), over every key."""
    stmt = select(func.count()).select_from(sessions).where(sessions.c.ended_at.is_(None))
    return int((await conn.execute(stmt)).scalar_one())


async def recent(conn: AsyncConnection, limit: int) -> list[SessionRow]:
    rows = await conn.execute(_RECENT, {"limit": limit})
    return [session_from_row(r._mapping) for r in rows]


def session_from_row(row: Mapping[Any, Any]) -> SessionRow:
    """A ``prompts.SESSION_SQL`` row (from SQLAlchemy or a raw ``Tx.fetch``) as a
    ``SessionRow``, its prompt and tool list read back from ``prompts``."""
    values = {name: row[name] for name in _FIELDS if name not in _STORED}
    values["system_prompt"] = prompts.prompt_of(row)
    values["tool_specs"] = row["tools_body"]
    if isinstance(values["prompt_tiers"], str):
        values["prompt_tiers"] = json.loads(values["prompt_tiers"])
    return SessionRow(**values)
