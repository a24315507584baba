"""Writing a finished turn: transcript, replies, inbox status and counters at once."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from core.media.refs import refs_to_json
from core.messages import OutboundMessage
from core.store import outbox as outbox_ops
from core.store import sessions as session_ops
from core.store.records import NewMessage, TurnOutcome
from core.store.text import scrub_row
from core.store.tx import Tx, insert_sql

_MESSAGE_COLUMNS = (
    "session_id",
    "role",
    "content",
    "api_content",
    "tool_calls",
    "tool_call_id",
    "tool_name",
    "platform_message_id",
    "created_at",
    "finish_reason",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "media",
    "user_id",
)
ADD_MESSAGE = insert_sql("messages", _MESSAGE_COLUMNS)
_ADD_MESSAGE_ID = insert_sql("messages", _MESSAGE_COLUMNS, " RETURNING id")
_TOUCH = "UPDATE sessions SET last_active_at = :at WHERE id = :id"
_BUMP = (
    "UPDATE sessions SET last_active_at = :at, message_count = message_count + :messages, "
    "turn_count = turn_count + 1, tool_call_count = tool_call_count + :tool_calls, "
    "input_tokens = input_tokens + :input_tokens, output_tokens = output_tokens + :output_tokens, "
    "cache_read_tokens = cache_read_tokens + :cache_read_tokens, "
    "cache_write_tokens = cache_write_tokens + :cache_write_tokens "
    "WHERE id = :id"
)
_INBOX_SET = (
    "UPDATE inbox SET status = :status, processed_at = :at, session_id = :session_id, "
    "error = :error"
)
# A done row's ``payload`` (reply-to, addressed, group, attachments) served dispatching
# its turn and nothing after: only pending rows are dispatched, and a redelivery is
# answered from the outbox by the row's id. ~55 bytes a message.
_INBOX_DONE = _INBOX_SET + ", payload = NULL WHERE id = :id"
_INBOX_FAILED = _INBOX_SET + " WHERE id = :id"
# /stop can race a turn that just committed; a finished turn stays finished.
_INBOX_CANCELLED = _INBOX_SET + " WHERE id = :id AND status = 'pending'"
_INBOX_BY_STATUS = {"done": _INBOX_DONE, "cancelled": _INBOX_CANCELLED}


def write_turn(tx: Tx, outcome: TurnOutcome) -> list[OutboundMessage]:
    """Commit everything ``outcome`` holds; return the queued replies with their ids.

    A reply that is one of the turn's assistant messages word for word is queued as a
    pointer to that message, its text stored once (``core.store.outbox``)."""
    quoted = _quoted(outcome)
    ids = _add_messages(tx, outcome.messages, outcome.session_id, set(quoted.values()))
    message_of = {text: ids[index] for text, index in quoted.items()}
    if outcome.session_id is not None:
        _bump_session(tx, outcome, outcome.session_id)
    tx.execute(
        _INBOX_BY_STATUS.get(outcome.status, _INBOX_FAILED),
        {
            "id": outcome.item.id,
            "status": outcome.status,
            "at": outcome.processed_at,
            "session_id": outcome.session_id,
            "error": outcome.error,
        },
    )
    return outbox_ops.add_replies(
        tx,
        outcome.item,
        outcome.session_id,
        outcome.replies,
        outcome.processed_at,
        preview_id=outcome.preview_id,
        files=outcome.files,
        message_ids=[message_of.get(text) for text in outcome.replies],
    )


def _quoted(outcome: TurnOutcome) -> dict[str, int]:
    """Reply text to the position of the (last) assistant message of the turn that says
    exactly that; only texts some reply has."""
    wanted = {text for text in outcome.replies if text}
    return {
        m.content: index
        for index, m in enumerate(outcome.messages)
        if m.role == "assistant" and m.content is not None and m.content in wanted
    }


def _add_messages(
    tx: Tx, messages: Sequence[NewMessage], session_id: str | None, wanted: set[int]
) -> dict[int, int]:
    """Insert ``messages`` in order; return the ids of those at the ``wanted`` positions."""
    tx.messages_added(len(messages))
    ids: dict[int, int] = {}
    start = 0
    for index in sorted(wanted):
        if index > start:
            rows = [message_row(m, session_id) for m in messages[start:index]]
            tx.executemany(ADD_MESSAGE, rows)
        ids[index] = int(tx.scalar(_ADD_MESSAGE_ID, message_row(messages[index], session_id)))
        start = index + 1
    if start < len(messages):
        tx.executemany(ADD_MESSAGE, [message_row(m, session_id) for m in messages[start:]])
    return ids


def message_row(m: NewMessage, session_id: str | None) -> dict[str, Any]:
    return scrub_row(
        {
            "session_id": session_id,
            "role": m.role,
            "content": m.content,
            "api_content": m.api_content,
            "tool_calls": json.dumps(m.tool_calls) if m.tool_calls is not None else None,
            "tool_call_id": m.tool_call_id,
            "tool_name": m.tool_name,
            "platform_message_id": m.platform_message_id,
            "created_at": m.created_at,
            "finish_reason": m.finish_reason,
            "input_tokens": m.input_tokens,
            "output_tokens": m.output_tokens,
            "cache_read_tokens": m.cache_read_tokens,
            "cache_write_tokens": m.cache_write_tokens,
            "media": json.dumps(media) if (media := refs_to_json(m.media)) else None,
            "user_id": m.user_id,
        }
    )


def _bump_session(tx: Tx, outcome: TurnOutcome, session_id: str) -> None:
    if outcome.messages:
        tx.execute(
            _BUMP,
            {
                "id": session_id,
                "at": outcome.processed_at,
                "messages": len(outcome.messages),
                "tool_calls": outcome.tool_calls,
                "input_tokens": outcome.input_tokens,
                "output_tokens": outcome.output_tokens,
                "cache_read_tokens": outcome.cache_read_tokens,
                "cache_write_tokens": outcome.cache_write_tokens,
            },
        )
    else:
        tx.execute(_TOUCH, {"id": session_id, "at": outcome.processed_at})
    if outcome.end_session_reason is not None:
        session_ops.end(tx, session_id, outcome.end_session_reason, outcome.processed_at)
