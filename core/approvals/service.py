"""Pausing a turn for a person's decision, and resuming it.

A turn whose model asks for a call that needs approval (``ApprovalRules``) pauses
before running it: ``ApprovalStore.pause`` commits the approval with the turn's work so
far and the prompt (with its buttons) in one transaction, and whoever waits for the
turn (a webhook request) hears at once that it paused. The turn then waits for a
decision (``decide``: ``/approve``, ``/deny``, the webhook's approval route) or the
timeout, counted from the approval's creation, so a restart does not extend it; the
turn's own clock (``core.turn_watch.paused``) stops meanwhile. A decision is durable
before the waiting turn hears it, and a turn recovered after a restart reads it from
the store. When the gateway stops, waiting turns are set down (``TurnSuspended``):
nothing of theirs is lost, and they resume at the next start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from core.access import AccessPolicy
from core.approvals import text
from core.approvals.decision import Decided
from core.approvals.rules import ApprovalRules
from core.audit.events import NO_AUDIT, AuditSink, Who, args_digest
from core.clock import Clock
from core.errors import StoreError, TurnSuspended
from core.messages import ChatTarget
from core.models.base import ToolCall
from core.outbox import Outbox
from core.store.approvals import AskedCall, Verdict
from core.store.db import SessionDB
from core.store.records import Approval, ApprovalScope, InboxItem, NewMessage, TurnReplies
from core.turn_watch import paused

log = logging.getLogger(__name__)

OnPaused = Callable[[int, TurnReplies], None]
Destructive = Callable[[str], bool]


class Approvals:
    """See the module docstring."""

    def __init__(
        self,
        db: SessionDB,
        outbox: Outbox,
        access: AccessPolicy,
        clock: Clock,
        rules: ApprovalRules,
        *,
        destructive: Destructive,
        on_paused: OnPaused,
        audit: AuditSink = NO_AUDIT,
    ) -> None:
        self._audit = audit
        self._db = db
        self._outbox = outbox
        self._access = access
        self._clock = clock
        self.rules = rules
        self._destructive = destructive
        self._on_paused = on_paused
        self._waiters: dict[int, asyncio.Future[Approval]] = {}
        self._suspended = False

    def gate(self, item: InboxItem) -> ItemGate:
        """The gate the turn of ``item`` passes each tool call through."""
        return ItemGate(self, item)

    def may_decide(self, platform: str, user_id: str) -> bool:
        """Owners of ``platform`` and the people in ``tools.approvers``."""
        return self._access.is_owner(platform, user_id) or self.rules.approver(platform, user_id)

    def needs_approval(self, tool_name: str) -> bool:
        return self.rules.required(tool_name, destructive=self._destructive(tool_name))

    async def pending_in_chat(self, target: ChatTarget) -> list[Approval]:
        return await self._db.approvals.pending_in_chat(target)

    async def get(self, approval_id: int) -> Approval | None:
        return await self._db.approvals.get(approval_id)

    async def decide(
        self,
        approval_id: int,
        *,
        approve: bool,
        by: str,
        scope: ApprovalScope = "once",
        notify: bool = False,
    ) -> Decided:
        """Record a person's decision and wake the turn waiting for it. ``notify``: also
        tell the approval's chat (a decision made elsewhere)."""
        found = await self._db.approvals.get(approval_id)
        if found is None:
            return Decided("unknown")
        if found.status != "pending":
            return Decided("already", found)
        verdict = Verdict(
            approval_id,
            "approved" if approve else "denied",
            at=self._clock.now(),
            by=by,
            scope=scope if approve else None,
        )
        decided, won = await self._record(verdict, notify=notify)
        if not won:
            return Decided("already", decided)
        log.info("approval %s %s", approval_id, decided.status)
        return Decided("decided", decided)

    def suspend(self) -> None:
        """The gateway stops: set down every waiting turn (see the module docstring)."""
        self._suspended = True
        for waiter in self._waiters.values():
            if not waiter.done():
                waiter.set_exception(TurnSuspended())

    async def ask(
        self, item: InboxItem, session_id: str, call: ToolCall, so_far: Sequence[NewMessage]
    ) -> Approval:
        """Pause the turn of ``item`` on ``call``: store it, send the prompt, and tell
        whoever waits for the turn."""
        asked = AskedCall(
            item, session_id, call.id, call.name, call.arguments, so_far, self._clock.now()
        )
        approval, prompt = await self._db.approvals.pause(
            asked, lambda approval_id: text.prompt(approval_id, call.name, call.arguments)
        )
        log.info("approval %s asked: tool=%s", approval.id, call.name)
        self._audit.record(
            "approval_requested",
            {
                "approval_id": approval.id,
                "tool": call.name,
                "args_sha256": args_digest(call.arguments),
            },
            who=Who.of(item, session_id),
            turn_id=item.id,
        )
        await self._outbox.publish([prompt])
        self._on_paused(item.id, TurnReplies(session_id, [prompt], approvals=(approval,)))
        return approval

    async def outcome(self, approval: Approval) -> Approval:
        """``approval`` once decided: wait for a person, at most until its timeout."""
        if approval.status != "pending":
            return approval
        waiter = self._waiters.setdefault(approval.id, asyncio.get_running_loop().create_future())
        try:
            # Registered before this read: a decision lands either in the store (read
            # here) or on the waiter.
            fresh = await self._db.approvals.get(approval.id)
            if fresh is not None and fresh.status != "pending":
                return fresh
            if self._suspended:
                raise TurnSuspended
            left = self.rules.timeout_seconds - (self._clock.now() - approval.created_at)
            with paused():
                try:
                    async with asyncio.timeout(max(left, 0.0)):
                        return await waiter
                except TimeoutError:
                    return await self._expire(approval)
        except asyncio.CancelledError:
            # ``/stop`` (or the gateway's last resort): the question is moot. Recorded
            # before the lane commits the cancelled turn; shielded from a second cancel.
            if not self._suspended:
                await asyncio.shield(self._withdraw(approval.id))
            raise
        finally:
            if self._waiters.get(approval.id) is waiter:
                del self._waiters[approval.id]

    async def _expire(self, approval: Approval) -> Approval:
        verdict = Verdict(approval.id, "expired", at=self._clock.now())
        decided, won = await self._record(verdict, notify=True)
        if won:
            log.info("approval %s expired", approval.id)
        return decided

    async def _withdraw(self, approval_id: int) -> None:
        await self._record(Verdict(approval_id, "denied", at=self._clock.now(), by="/stop"))

    async def _record(self, verdict: Verdict, *, notify: bool = False) -> tuple[Approval, bool]:
        """Store ``verdict`` if the approval is still pending and wake its turn; the
        approval as stored after it, and whether this verdict was the one stored."""
        found = await self._db.approvals.get(verdict.approval_id)
        if notify and found is not None:
            as_decided = replace(
                found,
                status=verdict.status,
                decided_by=verdict.by,
                scope=verdict.scope,
                decided_at=verdict.at,
            )
            verdict = replace(verdict, notice=text.outcome(as_decided))
        decided, notices = await self._db.approvals.decide(verdict)
        if decided is None:  # someone (or the timeout) decided first
            current = await self._db.approvals.get(verdict.approval_id)
            if current is None:  # approvals are never deleted
                raise StoreError(f"approval {verdict.approval_id} is gone")
            return current, False
        self._audit.record(
            "approval_decided",
            {"approval_id": decided.id, "tool": decided.tool_name, "status": decided.status},
            turn_id=decided.inbox_id,
        )
        await self._outbox.publish(notices)
        waiter = self._waiters.get(decided.id)
        if waiter is not None and not waiter.done():
            waiter.set_result(decided)
        return decided, True

    async def waiting(self, item: InboxItem) -> None:
        """A resumed turn waits for a person again: it is not in flight, so a restart
        meanwhile counts as no crash (``core.crash_guard``; ``ask`` does this itself)."""
        await self._db.release([item.id])

    async def asked_for(self, item: InboxItem, call: ToolCall) -> Approval | None:
        """The approval already asked for ``call`` in ``item``'s turn (before a restart)."""
        return await self._db.approvals.for_call(item.id, call.id)

    async def granted(self, session_id: str, tool_name: str) -> bool:
        """Whether ``tool_name`` was approved for the rest of the session."""
        return await self._db.approvals.granted(session_id, tool_name)


class ItemGate:
    """``core.turn.CallGate`` for one inbox item's turn."""

    def __init__(self, approvals: Approvals, item: InboxItem) -> None:
        self._approvals = approvals
        self._item = item

    async def clear(
        self, call: ToolCall, session_id: str, so_far: Sequence[NewMessage]
    ) -> str | None:
        """None when ``call`` may run; else the tool result that stands in for it."""
        approvals = self._approvals
        if not approvals.needs_approval(call.name):
            return None
        asked = await approvals.asked_for(self._item, call)  # resumed after a restart
        if asked is None:
            if await approvals.granted(session_id, call.name):
                return None
            asked = await approvals.ask(self._item, session_id, call, so_far)
        elif asked.status == "pending":
            await approvals.waiting(self._item)
        decided = await approvals.outcome(asked)
        if decided.status == "approved":
            return None
        return text.tool_result(decided, approvals.rules.timeout_seconds)
