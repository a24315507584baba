"""The kinds of SessionDB rows kept about a person, each able to list and forget its own.

``DB_AREAS`` is the registry: ``people show`` and ``people export`` list every area's
rows, ``people forget`` runs every area's ``forget`` in order, in ONE write transaction.
A feature that keeps rows about people adds its area here (usage and audit plug in
this way): ``rows`` returns plain JSON-able dicts, ``forget`` deletes (or pseudonymises)
and returns how many rows it changed. Areas run in the order listed, so an area whose
rows others reference comes after them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import field
from typing import Any

from core.record import record
from core.store.audit import who_id
from core.store.people.drop import drop_inbox, drop_session, recount
from core.store.people.plan import Plan
from core.store.tx import Tx

Rows = list[dict[str, Any]]


@record
class ForgetContext:
    """What one forgetting knows besides the plan."""

    at: float
    # The inbox row being answered right now (``/forget-me confirm``): its reply is still
    # to be written against it, so it stays.
    keep_inbox_id: int | None = None
    # Shared sessions whose stored prompt carries the person's data: ended ('forget').
    end_sessions: frozenset[str] = field(default_factory=frozenset)
    # The audit's secret salt (``core.audit.salt``) for the person's pseudonym; empty:
    # a fresh random one, so the pseudonym links to nothing.
    salt: bytes = b""


@record
class DbArea:
    name: str
    rows: Callable[[Tx, Plan], Rows]
    forget: Callable[[Tx, Plan, ForgetContext], int]


_MESSAGE_COLUMNS = "id, session_id, role, content, tool_name, created_at, user_id"


def _message_rows(tx: Tx, plan: Plan) -> Rows:
    rows: Rows = []
    for session_id in plan.alone:
        rows += tx.fetch(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE session_id = :id ORDER BY id",
            {"id": session_id},
        )
    for turn in plan.turns:
        rows += tx.fetch(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE session_id = :id "
            "AND id >= :first AND id < :end ORDER BY id",
            {"id": turn.session_id, "first": turn.first, "end": turn.end},
        )
    return rows


def _forget_messages(tx: Tx, plan: Plan, ctx: ForgetContext) -> int:
    gone = 0
    for session_id in plan.alone:  # the rest of these sessions goes with ``sessions``
        only = {"id": session_id}
        gone += int(tx.scalar("SELECT count(*) FROM messages WHERE session_id = :id", only))
        tx.execute("DELETE FROM messages WHERE session_id = :id", only)
    for turn in plan.turns:
        args: dict[str, object] = {"id": turn.session_id, "first": turn.first, "end": turn.end}
        where = "WHERE session_id = :id AND id >= :first AND id < :end"
        gone += int(tx.scalar(f"SELECT count(*) FROM messages {where}", args))
        tx.execute(f"DELETE FROM messages {where}", args)
    for session_id in plan.shared:
        recount(tx, session_id)
    return gone


_INBOX = (
    "SELECT id, chat_id, thread_id, route, text, received_at, status, session_id FROM inbox "
    "WHERE platform = :platform AND user_id = :user_id ORDER BY id"
)


# A reply's text is its own or its assistant message's (``core.store.outbox``).
_REPLIES = (
    "SELECT COALESCE(o.text, m.content, '') AS text FROM outbox o "
    "LEFT JOIN messages m ON m.id = o.message_id WHERE o.inbox_id = :id ORDER BY o.id"
)


def _inbox_rows(tx: Tx, plan: Plan) -> Rows:
    rows = tx.fetch(_INBOX, plan.params())
    for row in rows:
        row["replies"] = [r["text"] for r in tx.fetch(_REPLIES, {"id": row["id"]})]
    return rows


def _forget_inbox(tx: Tx, plan: Plan, ctx: ForgetContext) -> int:
    """Their inbound messages with the replies to them; one still waiting for its turn
    stays (its turn is queued in the running gateway), as does ``keep_inbox_id``."""
    gone = 0
    for row in tx.fetch(_INBOX, plan.params()):
        if row["status"] != "pending" and row["id"] != ctx.keep_inbox_id:
            drop_inbox(tx, int(row["id"]))
            gone += 1
    return gone


_SESSION_COLUMNS = (
    "id, session_key, chat_id, thread_id, route, started_at, ended_at, end_reason, "
    "message_count, user_id"
)


def _session_rows(tx: Tx, plan: Plan) -> Rows:
    rows: Rows = []
    for part, ids in (("alone", plan.alone), ("shared", plan.shared)):
        for session_id in ids:
            for row in tx.fetch(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = :id", {"id": session_id}
            ):
                row["opened_by_them"] = row.pop("user_id") == plan.person.user_id
                rows.append({**row, "part": part})
    return rows


def _forget_sessions(tx: Tx, plan: Plan, ctx: ForgetContext) -> int:
    for session_id in plan.alone:
        drop_session(tx, session_id)
    for row in _session_rows(tx, plan):
        carries = row["opened_by_them"] or row["id"] in ctx.end_sessions
        if row["ended_at"] is None and carries:
            end_for_forget(tx, row["id"], ctx.at)
        if row["opened_by_them"]:  # the session stays (others' words), their id goes
            tx.execute("UPDATE sessions SET user_id = NULL WHERE id = :id", {"id": row["id"]})
    return len(plan.alone)


def end_for_forget(tx: Tx, session_id: str, at: float) -> None:
    """End a shared session whose frozen prompt was built with the person's data, and
    blank that prompt: the session is never replayed again, its transcript stays
    searchable, and the chat's next message opens a fresh session. The prompt's row
    goes with the next ``prompts.prune`` unless another session shares it."""
    tx.execute(
        "UPDATE sessions SET ended_at = :at, end_reason = 'forget', prompt_hash = NULL, "
        "prompt_id_at = NULL WHERE id = :id AND ended_at IS NULL",
        {"id": session_id, "at": at},
    )


_CRON = (
    "SELECT id, name, prompt, schedule, deliver, created_at FROM cron_jobs "
    "WHERE origin_platform = :platform AND origin_user_id = :user_id ORDER BY created_at"
)


def _cron_rows(tx: Tx, plan: Plan) -> Rows:
    return tx.fetch(_CRON, plan.params())


def _forget_cron(tx: Tx, plan: Plan, ctx: ForgetContext) -> int:
    jobs = _cron_rows(tx, plan)
    for job in jobs:
        tx.execute("DELETE FROM cron_runs WHERE job_id = :id", {"id": job["id"]})
        tx.execute("DELETE FROM cron_jobs WHERE id = :id", {"id": job["id"]})
    return len(jobs)


def _pairing_rows(tx: Tx, plan: Plan) -> Rows:
    where = "WHERE platform = :platform AND user_id = :user_id"
    paired = tx.fetch(
        f"SELECT user_name, approved_at, approved_by FROM paired_people {where}", plan.params()
    )
    asked = tx.fetch(
        f"SELECT user_name, chat_id, created_at, expires_at FROM pairing_requests {where}",
        plan.params(),
    )
    return [{"kind": "paired", **r} for r in paired] + [{"kind": "request", **r} for r in asked]


def _forget_pairing(tx: Tx, plan: Plan, ctx: ForgetContext) -> int:
    gone = len(_pairing_rows(tx, plan))
    where = "WHERE platform = :platform AND user_id = :user_id"
    tx.execute(f"DELETE FROM paired_people {where}", plan.params())
    tx.execute(f"DELETE FROM pairing_requests {where}", plan.params())
    return gone


_USAGE = (
    "SELECT at, session_id, chat_key, platform, route, kind, provider, model, input_tokens, "
    "output_tokens, cache_read_tokens, cache_write_tokens, cost FROM usage "
    "WHERE person = :person ORDER BY id"
)


_AUDIT = (
    "SELECT a.id, a.at, a.event, w.session_id, w.chat_key, w.platform, a.message_id, a.detail "
    "FROM audit_who w JOIN audit a ON a.who_id = w.id WHERE w.person = :person ORDER BY a.id"
)


def _usage_rows(tx: Tx, plan: Plan) -> Rows:
    return tx.fetch(_USAGE, {"person": str(plan.person)})


def _forget_usage(tx: Tx, plan: Plan, ctx: ForgetContext) -> int:
    """Their model calls' rows go (and with them their part of every total)."""
    only = {"person": str(plan.person)}
    gone = int(tx.scalar("SELECT count(*) FROM usage WHERE person = :person", only))
    tx.execute("DELETE FROM usage WHERE person = :person", only)
    return gone


def _audit_rows(tx: Tx, plan: Plan) -> Rows:
    rows = tx.fetch(_AUDIT, {"person": str(plan.person)})
    for row in rows:
        if isinstance(row["detail"], str):
            row["detail"] = json.loads(row["detail"])
    return rows


def _forget_audit(tx: Tx, plan: Plan, ctx: ForgetContext) -> int:
    """Pseudonymise their audit rows (person and chat key become salted hashes; the chat
    keys of their rows everywhere, a notice to their chat too) and add one
    ``person_forgotten`` event under the pseudonym: the ledger keeps what happened, not
    who it happened to."""
    salt = ctx.salt or os.urandom(32)
    pseudonym = plan.person.pseudonym(salt)
    person = {"person": str(plan.person)}
    changed = int(
        tx.scalar(
            "SELECT count(*) FROM audit_who w JOIN audit a ON a.who_id = w.id "
            "WHERE w.person = :person",
            person,
        )
    )
    # Whom events concern is stored once (``audit_who``): rewriting those rows rewrites
    # every event that points at them. Their digest goes, so that events about the
    # same ids later (the person may come back) get a row of their own.
    keys = tx.fetch("SELECT DISTINCT chat_key FROM audit_who WHERE person = :person", person)
    for row in keys:
        if row["chat_key"] is not None:
            hashed = hashlib.sha256(salt + str(row["chat_key"]).encode()).hexdigest()
            tx.execute(
                "UPDATE audit_who SET chat_key = :hashed, digest = NULL WHERE chat_key = :key",
                {"hashed": hashed, "key": row["chat_key"]},
            )
    tx.execute(
        "UPDATE audit_who SET person = :pseudonym, digest = NULL WHERE person = :person",
        {**person, "pseudonym": pseudonym},
    )
    tx.execute(
        "INSERT INTO audit (at, event, who_id, detail) "
        "VALUES (:at, 'person_forgotten', :who_id, :detail)",
        {
            "at": ctx.at,
            "who_id": who_id(tx, (plan.person.platform, None, pseudonym, None)),
            "detail": json.dumps({"rows": changed}),
        },
    )
    return changed


# In forgetting order: messages before their sessions, inbox rows before the sessions
# they point at. Usage and audit areas go here (``forget`` of the audit's area
# pseudonymises rather than deletes, and records one ``person_forgotten`` event under
# ``Person.pseudonym``: the hook is ``ForgetContext`` plus this list).
DB_AREAS: list[DbArea] = [
    DbArea("messages", _message_rows, _forget_messages),
    DbArea("inbox", _inbox_rows, _forget_inbox),
    DbArea("sessions", _session_rows, _forget_sessions),
    DbArea("cron_jobs", _cron_rows, _forget_cron),
    DbArea("pairing", _pairing_rows, _forget_pairing),
    DbArea("usage", _usage_rows, _forget_usage),
    DbArea("audit", _audit_rows, _forget_audit),
]
