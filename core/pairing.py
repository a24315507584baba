"""Pairing: how a stranger asks an owner for access, and how an owner lets them in.

A person the platform's policy does not know writes in a DM and gets an 8-character
code (upper-case letters and digits without look-alikes: no I, O, 0 or 1), valid for
an hour; at most ``max_pending`` codes wait per platform and one person asks at most
once per ``min_interval_seconds``. An owner approves the code (``/pair approve CODE``
in a chat, or ``chatgate pairing approve PLATFORM CODE``), any case, with or without
spaces and dashes. Codes are stored hashed; nobody approves themselves; 5 wrong codes
in an hour lock approval on that platform for the rest of the hour.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime

from core.audit.events import NO_AUDIT, AuditSink, Who
from core.clock import Clock
from core.messages import InboundMessage
from core.store.pairing import Limits, PairingRequest, PairingStore

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
VALID_SECONDS = 3600.0

OFFER = (
    "Hi! I only talk with people this bot's owner has let in. To ask for access, send "
    "the owner this code: {code} (it works for one hour)."
)
FULL = (
    "Hi! I only talk with people this bot's owner has let in, and several requests are "
    "already waiting for them. Please try again later."
)


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normalized(code: str) -> str:
    """The code as stored: upper case, without the spaces and dashes people add."""
    return "".join(c for c in code.upper() if c not in " -_")


def code_hash(platform: str, code: str) -> str:
    return hashlib.sha256(f"{platform}:{normalized(code)}".encode()).hexdigest()


class Pairings:
    """See the module docstring."""

    def __init__(
        self,
        store: PairingStore,
        clock: Clock,
        limits: Limits | None = None,
        audit: AuditSink = NO_AUDIT,
    ) -> None:
        self._audit = audit
        self._store = store
        self._clock = clock
        self._limits = limits or Limits()

    async def is_paired(self, platform: str, user_id: str) -> bool:
        return await self._store.is_paired(platform, user_id)

    async def offer(self, msg: InboundMessage) -> str | None:
        """The text that answers a stranger's DM: a fresh code, or "try later" when too
        many wait; None when they asked for one a moment ago (nothing to say again)."""
        code, now = new_code(), self._clock.now()
        request = PairingRequest(
            platform=msg.platform,
            user_id=msg.user_id,
            user_name=msg.user_name,
            chat_id=msg.chat_id,
            code_hash=code_hash(msg.platform, code),
            created_at=now,
            expires_at=now + VALID_SECONDS,
        )
        opened = await self._store.open_request(request, self._limits)
        self._note("requested", msg.platform, msg.user_id, opened)
        if opened == "opened":
            return OFFER.format(code=code)
        return FULL if opened == "full" else None

    async def approve(self, platform: str, code: str, *, approver: str) -> tuple[bool, str]:
        """Whether ``code`` let someone in, and one line saying what became of it."""
        if len(normalized(code)) != CODE_LENGTH:
            return False, f"A pairing code has {CODE_LENGTH} letters and digits, e.g. ABCD2345."
        outcome, request = await self._store.approve(
            platform,
            code_hash(platform, code),
            approver=approver,
            now=self._clock.now(),
            limits=self._limits,
        )
        if outcome == "locked":
            return False, "Too many wrong codes: pairing approval is locked for up to an hour."
        if outcome == "unknown" or request is None:
            return False, f"No {platform} pairing request is waiting with that code (expired?)."
        if outcome == "self":
            return False, "Nobody can approve their own pairing request."
        self._note("approved", platform, request.user_id)
        return True, f"Approved {_who(request.user_name, request.user_id)} on {platform}."

    async def revoke(self, platform: str, user_id: str) -> tuple[bool, str]:
        if await self._store.revoke(platform, user_id):
            self._note("revoked", platform, user_id)
            return True, f"Revoked {platform}:{user_id}; they are a stranger again."
        return False, f"{platform}:{user_id} was not paired."

    def _note(self, action: str, platform: str, user_id: str, outcome: str = "ok") -> None:
        who = Who(platform=platform, person=f"{platform}:{user_id}")
        self._audit.record("pairing", {"action": action, "outcome": outcome}, who=who)

    async def listing(self, platform: str | None = None) -> str:
        """The waiting requests and the people let in, for ``/pair list`` and the CLI."""
        now = self._clock.now()
        waiting = await self._store.pending(now, platform)
        people = await self._store.people(platform)
        lines = [f"Waiting for approval: {len(waiting)}"]
        lines += [
            f"- {r.platform}:{r.user_id} {_who(r.user_name, r.user_id)}, "
            f"asked {_ago(now, r.created_at)}"
            for r in waiting
        ]
        lines.append(f"Let in: {len(people)}")
        lines += [
            f"- {p.platform}:{p.user_id} {_who(p.user_name, p.user_id)}, "
            f"since {_date(p.approved_at)} (by {p.approved_by})"
            for p in people
        ]
        return "\n".join(lines)


def _who(name: str | None, user_id: str) -> str:
    return f"{name} ({user_id})" if name else user_id


def _ago(now: float, at: float) -> str:
    minutes = max(0, int((now - at) // 60))
    return f"{minutes} min ago"


def _date(at: float) -> str:
    return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
