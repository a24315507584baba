"""Compaction: when a session outgrows the model's context, start a child session.

The older part of the transcript is summarised by the model; the session ends with
``end_reason='compaction'`` and a child session (``parent_session_id`` pointing back)
starts with the summary, the recent messages and a freshly built system prompt. The
parent keeps every message, so search still finds them (one hit per lineage).
The switch is one transaction: a crash leaves either the parent active or the child.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.models.base import ChatMessage, ModelClient, ModelRequest
from core.record import record
from core.store.records import NewMessage, StoredMessage
from core.usage.attribution import attributed

SUMMARY_INSTRUCTION = (
    "You are compacting a long conversation so it can continue in a fresh context. "
    "Write a faithful summary of the transcript below for your future self: the user's "
    "goals and preferences, decisions made, facts and figures mentioned, work done and "
    "what is still open. Keep names, numbers and file paths exact. Do not add anything "
    "that was not said. Answer with the summary only."
)
SUMMARY_PREFIX = "[Summary of the earlier part of this conversation, written when it was compacted]"
ACKNOWLEDGEMENT = "Understood. I have the summary and will continue from here."
NOTICE = "(Earlier messages were summarised to keep this conversation within the model's context.)"
CHARS_PER_TOKEN = 4
NOTES_HEADING = "[Notes to keep in the summary, from the agent's memory provider:]"


@record
class CompactionSettings:
    context_window: int = 128_000
    threshold: float = 0.8
    keep_recent_messages: int = 10


@record
class Plan:
    """The transcript split into the part to summarise and the part kept verbatim."""

    older: list[StoredMessage]
    recent: list[StoredMessage]


def message_chars(messages: Sequence[ChatMessage]) -> int:
    """Characters the messages add to a request (content, tool calls, a little framing)."""
    chars = 0
    for m in messages:
        chars += len(m.content or "") + 16
        chars += sum(len(c.arguments) + len(c.name) for c in m.tool_calls)
    return chars


def estimated_tokens(system: str, messages: Sequence[ChatMessage]) -> int:
    """A cheap, provider-independent estimate (about four characters per token)."""
    return (len(system) + message_chars(messages)) // CHARS_PER_TOKEN


def exceeds(settings: CompactionSettings, chars: int) -> bool:
    """Whether a request of ``chars`` characters passes the compaction threshold."""
    return chars // CHARS_PER_TOKEN > settings.threshold * settings.context_window


def is_due(settings: CompactionSettings, system: str, messages: Sequence[ChatMessage]) -> bool:
    return exceeds(settings, len(system) + message_chars(messages))


def plan(stored: Sequence[StoredMessage], keep_recent: int) -> Plan | None:
    """Where to cut: the recent part starts at a user message, so no tool result is orphaned."""
    cut = max(len(stored) - keep_recent, 0)
    while 0 < cut < len(stored) and stored[cut].role != "user":
        cut -= 1
    if cut <= 0:
        return None
    return Plan(older=list(stored[:cut]), recent=list(stored[cut:]))


async def summarise(
    model: ModelClient, older: Sequence[StoredMessage], notes: Sequence[str] = ()
) -> str:
    """Ask the model for a summary of ``older``; raises ``ModelError`` when it cannot.

    ``notes`` (from the ``pre_compress`` hooks, e.g. a memory provider) follow the
    transcript as points the summary must keep.
    """
    text = transcript_text(older)
    if notes:
        text += f"\n\n{NOTES_HEADING}\n\n" + "\n\n".join(notes)
    request = ModelRequest(
        system=SUMMARY_INSTRUCTION,
        messages=[ChatMessage(role="user", content=text)],
    )
    with attributed(kind="compaction"):  # charged to the chat, as its turns are
        reply = await model.complete(request)
    return (reply.content or "").strip()


def message_dicts(messages: Sequence[StoredMessage]) -> list[dict[str, Any]]:
    """``messages`` as plain dicts for code outside the core (a memory provider)."""
    shaped: list[dict[str, Any]] = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role, "content": m.content or ""}
        if m.tool_name:
            item["tool_name"] = m.tool_name
        if m.tool_calls:
            item["tool_calls"] = [dict(call) for call in m.tool_calls]
        shaped.append(item)
    return shaped


def transcript_text(messages: Sequence[StoredMessage]) -> str:
    lines = []
    for m in messages:
        if m.role == "tool":
            lines.append(f"Tool result ({m.tool_name}): {m.content or ''}")
            continue
        speaker = "User" if m.role == "user" else "Assistant"
        if m.content:
            lines.append(f"{speaker}: {m.content}")
        for call in m.tool_calls or ():
            lines.append(f"Assistant called {call['name']} with {call['arguments']}")
    return "\n\n".join(lines)


def child_messages(summary: str, recent: Sequence[StoredMessage], at: float) -> list[NewMessage]:
    """The child session's opening transcript: the summary, then the recent messages."""
    opening = [
        NewMessage(role="user", content=f"{SUMMARY_PREFIX}\n\n{summary}", created_at=at),
        NewMessage(role="assistant", content=ACKNOWLEDGEMENT, created_at=at),
    ]
    copies = [
        NewMessage(
            role=m.role,
            content=m.content,
            api_content=m.api_content,
            tool_calls=m.tool_calls,
            tool_call_id=m.tool_call_id,
            tool_name=m.tool_name,
            created_at=at,
            user_id=m.user_id,
        )
        for m in recent
    ]
    return opening + copies


def as_stored(messages: Sequence[NewMessage]) -> list[StoredMessage]:
    """New rows as the turn loop reads history (ids are not needed for replay)."""
    return [
        StoredMessage(
            id=0,
            role=m.role,
            content=m.content,
            api_content=m.api_content,
            tool_calls=m.tool_calls,
            tool_call_id=m.tool_call_id,
            tool_name=m.tool_name,
            user_id=m.user_id,
        )
        for m in messages
    ]
