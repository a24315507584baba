"""Writing a finished turn: transcript, replies, inbox status and counters at once."""

from __future__ import annotations

import dataclasses

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncConnection

from core.messages import OutboundMessage
from core.store import outbox as outbox_ops
from core.store import sessions as session_ops
from core.store.records import TurnOutcome
from core.store.schema import inbox, messages, sessions
from core.store.text import scrub_row


async def write_turn(conn: AsyncConnection, outcome: TurnOutcome) -> list[OutboundMessage]:
    """Commit everything ``outcome`` holds; return the queued replies with their ids."""
    if outcome.messages:
        rows = [
            scrub_row({**dataclasses.asdict(m), "session_id": outcome.session_id})
            for m in outcome.messages
        ]
        await conn.execute(messages.insert(), rows)
    if outcome.session_id is not None:
        await _bump_session(conn, outcome)
    target = inbox.c.id == outcome.item.id
    if outcome.status == "cancelled":
        # /stop can race a turn that just committed; a finished turn stays finished.
        target = target & (inbox.c.status == "pending")
    await conn.execute(
        update(inbox)
        .where(target)
        .values(
            status=outcome.status,
            processed_at=outcome.processed_at,
            session_id=outcome.session_id,
            error=outcome.error,
        )
    )
    return await outbox_ops.add_replies(
        conn, outcome.item, outcome.session_id, outcome.replies, outcome.processed_at
    )


async def _bump_session(conn: AsyncConnection, outcome: TurnOutcome) -> None:
    assert outcome.session_id is not None
    values: dict[str, object] = {"last_active_at": outcome.processed_at}
    if outcome.messages:
        values.update(
            message_count=sessions.c.message_count + len(outcome.messages),
            turn_count=sessions.c.turn_count + 1,
            tool_call_count=sessions.c.tool_call_count + outcome.tool_calls,
            input_tokens=sessions.c.input_tokens + outcome.input_tokens,
            output_tokens=sessions.c.output_tokens + outcome.output_tokens,
        )
    await conn.execute(update(sessions).where(sessions.c.id == outcome.session_id).values(**values))
    if outcome.end_session_reason is not None:
        await session_ops.end(
            conn, outcome.session_id, outcome.end_session_reason, outcome.processed_at
        )
