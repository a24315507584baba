"""Ingress: the core's front door, as adapters see it (``core.inbox.Inbox``).

``accept`` first asks the access policy (``core.access``) whether the message may reach
the agent at all; then it commits the message to the inbox (a redelivery of the same
platform message is recognised by its dedup key and not queued again) and queues it on
its session's lane, with the chat command it invokes parsed once, here. ``/stop`` jumps
the queue: it must reach the turn it is meant to cancel; so do the commands marked
``immediate`` (``/approve`` and ``/deny`` decide for a turn that waits on its lane).
``recover`` queues what a previous process accepted but never processed. Once
``stop_intake`` has been called (the gateway is stopping), what adapters still hand in
is committed but not queued: it waits in the inbox for the next start, and
``accepting`` tells adapters that can refuse instead.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Mapping
from dataclasses import field

from core.access import AccessPolicy, TurnedAway
from core.approvals.decision import Decided
from core.approvals.service import Approvals
from core.audit.events import NO_AUDIT, AuditSink, Who
from core.clock import Clock
from core.commands import STOP, CommandRegistry
from core.messages import InboundMessage, OutboundFile, OutboundMessage
from core.rate_limit import ChatRateLimiter
from core.record import record
from core.router import SessionRouter
from core.session_key import session_key
from core.stats import CoreStats
from core.store.db import SessionDB
from core.store.records import Accepted, ApprovalScope, InboxItem, LastSeen, TurnReplies
from core.tasks import TaskSet
from core.turn_context import scope
from core.turns import TurnProcessor, Work

log = logging.getLogger(__name__)


@record
class SessionPolicy:
    """Whether members of a group chat each get their own session, per platform."""

    group_sessions_per_user: bool = True
    # Per platform, overriding ``group_sessions_per_user``.
    by_platform: Mapping[str, bool] = field(default_factory=dict)

    def per_user(self, platform: str) -> bool:
        return self.by_platform.get(platform, self.group_sessions_per_user)


class Ingress:
    """See the module docstring. Implements ``core.inbox.Inbox``."""

    def __init__(
        self,
        db: SessionDB,
        router: SessionRouter[Work],
        processor: TurnProcessor,
        commands: CommandRegistry,
        stats: CoreStats,
        policy: SessionPolicy,
        access: AccessPolicy,
        limiter: ChatRateLimiter,
        clock: Clock,
        approvals: Approvals,
        audit: AuditSink = NO_AUDIT,
    ) -> None:
        self._db = db
        self._audit = audit
        self._approvals = approvals
        self._clock = clock
        self._access = access
        self._limiter = limiter
        self._router = router
        self._processor = processor
        self._commands = commands
        self._stats = stats
        self._policy = policy
        self._tasks = TaskSet("ingress")
        self._accepting = True

    @property
    def accepting(self) -> bool:
        """False once the gateway is stopping (see the module docstring)."""
        return self._accepting

    def stop_intake(self) -> None:
        self._accepting = False

    async def close(self) -> None:
        await self._tasks.close()

    async def accept(self, msg: InboundMessage) -> Accepted | TurnedAway:
        """Commit ``msg`` to the inbox and queue it; a redelivery is not queued again.
        A message the access policy keeps out is not stored (``TurnedAway``)."""
        turned_away = await self._access.check(msg)
        if turned_away is not None:
            self._stats.turned_away[msg.platform] += 1
            return turned_away
        key = session_key(msg, group_sessions_per_user=self._policy.per_user(msg.platform))
        accepted = await self._db.accept(msg, key)
        with scope(accepted.item.id):
            await self._queue(accepted)
        return accepted

    async def _queue(self, accepted: Accepted) -> None:
        platform = accepted.item.message.platform
        if not accepted.created:
            log.debug("inbound redelivery ignored: platform=%s", platform)
            self._stats.duplicates[platform] += 1
            return
        self._stats.inbound[platform] += 1
        log.debug("inbound accepted: platform=%s", platform)
        self._received(accepted.item)
        if self._accepting and self._dispatch(accepted.item, paced=True):
            await self._limiter.notify(accepted.item)

    def _received(self, item: InboxItem) -> None:
        msg = item.message
        self._audit.remember(item.id, Who.of(item))
        # The chat is the event's chat key, never repeated in ``detail``: a forgetting
        # pseudonymises the key, and would miss a copy.
        self._audit.record(
            "message_received",
            {"route": msg.route} if msg.route else None,
            turn_id=item.id,
            message_id=msg.platform_message_id,
        )

    async def recover(self, up_to: int | None = None) -> int:
        """Queue every message accepted before a restart but never processed.

        ``up_to`` is the newest inbox id before the adapters started: what they accept
        from then on is dispatched as it arrives and must not be queued twice.
        """
        items = await self._db.pending_inbox(up_to)
        for item in items:
            if self._router.in_flight(item.id):
                continue
            self._dispatch(item, recovered=True)
        if items:
            log.info("recovered %d unprocessed inbound messages", len(items))
        return len(items)

    async def admits(self, msg: InboundMessage) -> bool:
        return await self._access.admits(msg)

    def replies(self, item: InboxItem) -> Awaitable[TurnReplies]:
        """``item``'s replies: the future its turn resolves while it is in flight."""
        if self._router.in_flight(item.id):
            return self._router.watch(item.id)
        return self._stored_replies(item)

    async def _stored_replies(self, item: InboxItem) -> TurnReplies:
        # Re-read the row: the turn may have finished after ``item`` was read.
        current = await self._db.inbox_item(item.id) or item
        replies = await self._db.replies_for(item.id)
        if current.status == "pending":  # its turn may be waiting for an approval
            asked = await self._db.approvals.latest_for_inbox(item.id)
            if asked is not None and asked.status == "pending":
                return TurnReplies(asked.session_id, replies, approvals=(asked,))
        return TurnReplies(current.session_id, replies, pending=current.status == "pending")

    async def replies_after(
        self, *, platform: str, route: str | None, chat_id: str, after: int, limit: int
    ) -> list[OutboundMessage]:
        return await self._db.replies_after(
            platform=platform, route=route, chat_id=chat_id, after=after, limit=limit
        )

    async def last_seen(
        self, platform: str, since: float, until: float, limit: int = 500
    ) -> list[LastSeen]:
        return await self._db.last_seen(platform, since, until, limit)

    async def sent_file(
        self, file_id: str, *, platform: str, route: str | None
    ) -> tuple[OutboundFile, str] | None:
        return await self._db.outbound_file(file_id, platform=platform, route=route)

    async def decide_approval(
        self,
        approval_id: int,
        *,
        platform: str,
        route: str | None,
        user_id: str,
        approve: bool,
        scope: ApprovalScope = "once",
    ) -> Decided:
        found = await self._approvals.get(approval_id)
        if found is None or (found.target.platform, found.target.route) != (platform, route):
            return Decided("unknown")
        if not self._approvals.may_decide(platform, user_id):
            return Decided("forbidden")
        return await self._approvals.decide(
            approval_id, approve=approve, by=user_id, scope=scope, notify=True
        )

    def command_menu(self) -> list[tuple[str, str]]:
        return [(c.name, c.summary) for c in self._commands.all()]

    def _dispatch(self, item: InboxItem, *, paced: bool = False, recovered: bool = False) -> bool:
        """Queue ``item`` (``/stop`` and immediate commands jump the queue). ``paced``:
        under the chat's rate limit; True when the chat is to hear that it now waits
        (``ChatRateLimiter``). ``recovered``: accepted before a restart."""
        invocation = self._commands.parse(item.message.text)
        work = Work(item, invocation, self._clock.now(), recovered=recovered)
        if invocation is not None and invocation.command.name == STOP:
            self._router.watch(item.id)
            self._tasks.spawn(self._stop(work), name=f"stop:{item.session_key}")
            return False
        if invocation is not None and invocation.command.immediate:
            self._router.watch(item.id)
            self._tasks.spawn(self._immediately(work), name=f"command:{item.session_key}")
            return False
        tell = paced and self._limiter.schedule(item)
        self._router.submit(work)
        return tell

    async def _immediately(self, work: Work) -> None:
        try:
            replies = await self._processor.handle(work)
        except Exception:  # a bug in the command: its item stays pending, as on a lane
            log.exception("command for inbox %s crashed", work.id)
            replies = TurnReplies(work.session_id, [], pending=True)
        self._router.resolve(work.id, replies)

    async def _stop(self, work: Work) -> None:
        stopped = self._router.cancel(work.session_key)
        replies = await self._processor.stopped(work, stopped=stopped)
        self._router.resolve(work.id, replies)
