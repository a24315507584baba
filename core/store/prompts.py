"""Prompts stored once: system prompts and tool lists by content hash.

A session's frozen system prompt names the session (its volatile tier says
``Session: <id>``), so no two prompts would be equal as built. The session's id is
cut out before hashing and its position kept on the session row (``prompt_id_at``):
every chat opened on the same day with the same memory then shares one ``prompts``
row, and pasting the id back gives the exact bytes that were built, so what the model
is sent never changes. Tool lists (``sessions.tools_hash``) are stored the same way,
uncut, and so is a background review's instruction (``reviews.instruction_hash``,
``core.store.reviews``). A row nothing points at any more is deleted by ``prune``
(forgetting a person, retention).

A prune must not race a session opening on the prompt it deletes. On SQLite writes are
serialised; on PostgreSQL the prune first locks ``prompts`` against writers (``lock``),
so a replica's ``put`` either commits before the prune looks (its session is seen) or
waits and inserts the row again after it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from core.store.tx import Tx

# 128 bits of SHA-256: collisions are out of reach, and a session row stays small.
HASH_CHARS = 32

_PUT = (
    "INSERT INTO prompts (hash, body, created_at) VALUES (:hash, :body, :at) ON CONFLICT DO NOTHING"
)
# NOT IN over one list, not NOT EXISTS per row: both engines build the list once, and
# ``sessions`` needs no index on its hashes (bytes per session count, see issue 19).
_PRUNE = (
    "DELETE FROM prompts WHERE hash NOT IN ("
    "SELECT prompt_hash FROM sessions WHERE prompt_hash IS NOT NULL UNION "
    "SELECT tools_hash FROM sessions WHERE tools_hash IS NOT NULL UNION "
    "SELECT instruction_hash FROM reviews WHERE instruction_hash IS NOT NULL)"
)
# A sessions row with its prompt and tool list bodies, for ``from_stored``.
SESSION_SQL = (
    "SELECT s.*, p.body AS prompt_body, t.body AS tools_body FROM sessions s "
    "LEFT JOIN prompts p ON p.hash = s.prompt_hash "
    "LEFT JOIN prompts t ON t.hash = s.tools_hash"
)


def hash_of(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]


def cut(prompt: str, session_id: str) -> tuple[str, int | None]:
    """``prompt`` without its first mention of ``session_id``, and where that was."""
    at = prompt.find(session_id) if session_id else -1
    if at < 0:
        return prompt, None
    return prompt[:at] + prompt[at + len(session_id) :], at


def paste(body: str, session_id: str, at: int | None) -> str:
    """The prompt ``cut`` took apart, byte for byte."""
    return body if at is None else body[:at] + session_id + body[at:]


def put(tx: Tx, body: str, at: float) -> str:
    """Store ``body`` unless it is stored already; its hash."""
    key = hash_of(body)
    tx.execute(_PUT, {"hash": key, "body": body, "at": at})
    return key


def columns(tx: Tx, session_id: str, prompt: str, tools: str | None, at: float) -> dict[str, Any]:
    """The sessions columns that point at ``prompt`` and ``tools``, both stored now."""
    body, cut_at = cut(prompt, session_id)
    return {
        "prompt_hash": put(tx, body, at),
        "prompt_id_at": cut_at,
        "tools_hash": put(tx, tools, at) if tools is not None else None,
    }


def prompt_of(row: Any) -> str:
    """The system prompt of a ``SESSION_SQL`` row ("" when it was blanked)."""
    body = row["prompt_body"]
    return paste(body, row["id"], row["prompt_id_at"]) if body is not None else ""


def prune(tx: Tx, *, lock: bool) -> None:
    """Delete the prompts, tool lists and review instructions nothing points at
    (``lock``: PostgreSQL)."""
    if lock:
        tx.execute("LOCK TABLE prompts IN SHARE ROW EXCLUSIVE MODE", {})
    tx.execute(_PRUNE, {})
