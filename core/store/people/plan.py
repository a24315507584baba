"""Which sessions and turns are one person's: the plan that showing and forgetting share.

A session is **theirs alone** when they opened it or wrote in it and nobody else wrote
in it (no user message by another author, no inbox row from another person). Anything
else they wrote in is **shared**: there only their turns go. A turn is their user
message and every message after it up to the next user message of the session (the
assistant's replies and its tool calls with their results, which may quote them), so
what stays is still a valid transcript: whole turns, no tool call without its result.

Every function here takes a ``Tx``, so the same code runs inside the forgetting write
transaction and, through ``run_sync``, on a read connection for ``people show``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.people.person import Person
from core.record import record
from core.store.tx import Tx

# The id after every message id: the end of a session's last turn.
_NO_END = 2**62

_AUTHORED = (
    "SELECT DISTINCT m.session_id AS id FROM messages m JOIN sessions s ON s.id = m.session_id "
    "WHERE m.user_id = :user_id AND s.platform = :platform"
)
_OPENED = "SELECT id FROM sessions WHERE platform = :platform AND user_id = :user_id"
_OTHER_AUTHOR = (
    "SELECT 1 FROM messages WHERE session_id = :id AND role = 'user' "
    "AND user_id IS NOT NULL AND user_id != :user_id LIMIT 1"
)
_OTHER_SENDER = "SELECT 1 FROM inbox WHERE session_id = :id AND user_id != :user_id LIMIT 1"
_THEIR_USER_MESSAGES = (
    "SELECT id FROM messages WHERE session_id = :id AND role = 'user' AND user_id = :user_id "
    "ORDER BY id"
)
_NEXT_USER_MESSAGE = (
    "SELECT min(id) FROM messages WHERE session_id = :id AND role = 'user' AND id > :after"
)


@record
class Turn:
    """Messages ``first`` (their user message) up to, not including, ``end``."""

    session_id: str
    first: int
    end: int


@dataclass(slots=True)
class Plan:
    """One person's sessions and turns, as found in one transaction."""

    person: Person
    alone: list[str] = field(default_factory=list)
    shared: list[str] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)

    def params(self) -> dict[str, str]:
        return {"platform": self.person.platform, "user_id": self.person.user_id}


def plan(tx: Tx, person: Person) -> Plan:
    """Find ``person``'s sessions and, in shared ones, their turns."""
    found = Plan(person)
    params = found.params()
    candidates = {r["id"] for r in tx.fetch(_AUTHORED, params)}
    candidates |= {r["id"] for r in tx.fetch(_OPENED, params)}
    for session_id in sorted(candidates):
        if _others_wrote(tx, session_id, person):
            found.shared.append(session_id)
            found.turns.extend(_turns(tx, session_id, person))
        else:
            found.alone.append(session_id)
    return found


def _others_wrote(tx: Tx, session_id: str, person: Person) -> bool:
    args = {"id": session_id, "user_id": person.user_id}
    return bool(tx.fetch(_OTHER_AUTHOR, args) or tx.fetch(_OTHER_SENDER, args))


def _turns(tx: Tx, session_id: str, person: Person) -> list[Turn]:
    turns = []
    for row in tx.fetch(_THEIR_USER_MESSAGES, {"id": session_id, "user_id": person.user_id}):
        following = tx.scalar(_NEXT_USER_MESSAGE, {"id": session_id, "after": row["id"]})
        turns.append(Turn(session_id, int(row["id"]), int(following or _NO_END)))
    return turns
