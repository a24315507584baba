"""Session operations: one active session per key, ended by /new, never rewritten."""

from __future__ import annotations

import dataclasses
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from core.store.inbox import insert_ignoring_duplicates
from core.store.records import SessionRow, StoredMessage
from core.store.schema import messages, sessions
from core.store.text import scrub_row

_FIELDS = [f.name for f in dataclasses.fields(SessionRow)]


async def active(conn: AsyncConnection, key: str) -> SessionRow | None:
    """The session currently open for ``key``, if any."""
    row = (
        await conn.execute(
            select(sessions).where(sessions.c.session_key == key, sessions.c.ended_at.is_(None))
        )
    ).one_or_none()
    return _from_row(row) if row is not None else None


async def get(conn: AsyncConnection, session_id: str) -> SessionRow | None:
    row = (await conn.execute(select(sessions).where(sessions.c.id == session_id))).one_or_none()
    return _from_row(row) if row is not None else None


async def open_session(conn: AsyncConnection, new: SessionRow) -> SessionRow:
    """Insert ``new`` as the active session of its key, or return the one already active.

    The partial unique index on active keys decides races between replicas.
    """
    stmt = insert_ignoring_duplicates(conn, sessions).values(scrub_row(dataclasses.asdict(new)))
    await conn.execute(stmt)
    current = await active(conn, new.session_key)
    if current is None:  # pragma: no cover - the insert or a rival's row must be there
        raise RuntimeError("no active session after insert")
    return current


async def end(conn: AsyncConnection, session_id: str, reason: str, at: float) -> None:
    await conn.execute(
        update(sessions)
        .where(sessions.c.id == session_id, sessions.c.ended_at.is_(None))
        .values(ended_at=at, end_reason=reason)
    )


async def history(conn: AsyncConnection, session_id: str) -> list[StoredMessage]:
    """The session's transcript in order, as the model will see it again."""
    rows = await conn.execute(
        select(
            messages.c.id,
            messages.c.role,
            messages.c.content,
            messages.c.api_content,
            messages.c.tool_calls,
            messages.c.tool_call_id,
            messages.c.tool_name,
        )
        .where(messages.c.session_id == session_id)
        .order_by(messages.c.id)
    )
    return [
        StoredMessage(
            id=r.id,
            role=r.role,
            content=r.content,
            api_content=r.api_content,
            tool_calls=r.tool_calls,
            tool_call_id=r.tool_call_id,
            tool_name=r.tool_name,
        )
        for r in rows
    ]


async def recent(conn: AsyncConnection, limit: int) -> list[SessionRow]:
    rows = await conn.execute(
        select(sessions).order_by(sessions.c.last_active_at.desc()).limit(limit)
    )
    return [_from_row(r) for r in rows]


def _from_row(row: Row[Any]) -> SessionRow:
    data = row._mapping
    return SessionRow(**{name: data[name] for name in _FIELDS})
