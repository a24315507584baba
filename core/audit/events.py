"""What the core tells the audit ledger, and how it keeps bodies out of it.

An event is a name, who it concerns (``Who``: platform, chat key, person, session) and a
``detail`` of metadata: ids, counts, durations, outcomes, model names, a tool's name and
the SHA-256 of its arguments (``args_digest``), never a message's text or the arguments
themselves. ``AuditSink.record`` never blocks and never raises: the ledger must not
delay or fail a turn (``core.audit.writer``). ``NO_AUDIT`` records nothing.

Events: ``message_received``, ``turn_started``, ``turn_finished``, ``model_call``,
``tool_call``, ``approval_requested``, ``approval_decided``, ``pairing``,
``memory_write``, ``skill_write``, a reply's receipts ``delivery_queued``,
``delivery_sent``, ``delivery_delivered``, ``delivery_failed`` and ``delivery_unknown``
(``core.audit.receipts``), and ``person_forgotten`` (``core.store.people.areas``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Protocol

from core.record import record
from core.store.records import InboxItem


@record
class Who:
    """Whom an event concerns; every part optional (a background job concerns no chat)."""

    platform: str | None = None
    chat_key: str | None = None
    person: str | None = None
    session_id: str | None = None

    @classmethod
    def of(cls, item: InboxItem, session_id: str | None = None) -> Who:
        msg = item.message
        return cls(
            platform=msg.platform,
            chat_key=item.session_key,
            person=f"{msg.platform}:{msg.user_id}",
            session_id=session_id or item.session_id,
        )


Detail = Mapping[str, object]


class AuditSink(Protocol):
    def record(
        self,
        event: str,
        detail: Detail | None = None,
        *,
        who: Who | None = None,
        turn_id: int | None = None,
        message_id: str | None = None,
    ) -> None:
        """Queue one event (never blocks, never raises). Without ``who`` and ``turn_id``
        the event belongs to the turn being worked on (``core.turn_context``), if any."""
        ...

    def remember(self, turn_id: int, who: Who) -> None:
        """Whom the events of turn ``turn_id`` concern from now on."""
        ...

    def forgetting(self, person: str) -> None:
        """``person`` is being forgotten: events about them not yet written (and any
        later) are written without their id or chat key."""
        ...


class _NoAudit:
    def record(
        self,
        event: str,
        detail: Detail | None = None,
        *,
        who: Who | None = None,
        turn_id: int | None = None,
        message_id: str | None = None,
    ) -> None:
        return None

    def remember(self, turn_id: int, who: Who) -> None:
        return None

    def forgetting(self, person: str) -> None:
        return None


NO_AUDIT: AuditSink = _NoAudit()


def args_digest(arguments: str | None) -> str:
    """SHA-256 of a tool call's arguments as canonical JSON (sorted keys, no spaces), so
    equal arguments give equal digests however the model spaced them; text that is not
    JSON is hashed as it is."""
    raw = arguments or "{}"
    try:
        canonical = json.dumps(
            json.loads(raw), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
    except json.JSONDecodeError:
        canonical = raw
    return hashlib.sha256(canonical.encode()).hexdigest()
