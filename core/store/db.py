"""SessionDB: the one door to durable state. Writes go through the group writer."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AsyncExitStack
from functools import partial
from types import TracebackType

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from core.errors import StoreError
from core.messages import ChatTarget, InboundMessage, OutboundFile, OutboundMessage
from core.store import inbox as inbox_ops
from core.store import lineage, queue_retention
from core.store import outbox as outbox_ops
from core.store import sessions as session_ops
from core.store.approvals import ApprovalStore
from core.store.audit import AuditStore
from core.store.cron import CronStore
from core.store.curator import CuratorStore
from core.store.engine import Engines, create_engines, sqlite_path
from core.store.health import StoreHealth, write_probe
from core.store.lineage_tree import LineageEntry, lineage_of
from core.store.pairing import PairingStore
from core.store.people.store import PeopleStore
from core.store.queue_retention import QueuePruned
from core.store.reads import EngineReads, Reads, SqliteReads
from core.store.records import (
    Accepted,
    InboxItem,
    LastSeen,
    NewMessage,
    SessionRow,
    StoredMessage,
    TurnOutcome,
)
from core.store.reviews import ReviewStore
from core.store.search.reader import SearchStore
from core.store.turns import write_turn
from core.store.usage import UsageStore
from core.store.writer import (
    BatchRunner,
    GroupWriter,
    SqlAlchemyRunner,
    SqliteRunner,
    T,
    WriteOp,
)


class SessionDB:
    """Sessions, transcripts, inbox and outbox of one chatgate profile.

    Use as an async context manager; the schema must already be migrated. The
    repositories of the features that keep state here are attributes, built once:
    ``search`` (``session_search`` and ``chatgate sessions search``), ``reviews``
    (background reviews), ``curator`` (the skills curator's run log and flags) and
    ``cron`` (scheduled prompts and their runs), ``approvals`` (tool calls waiting
    for a person), ``people`` (one person's rows, shown or forgotten; retention),
    ``usage`` (each model call's tokens and cost; budget notices), ``audit`` (the audit ledger,
    ``core.audit``).
    The engines are private: every SQL statement lives in ``core/store``.
    """

    def __init__(
        self,
        url: str,
        *,
        busy_timeout_ms: int = 5000,
        max_batch: int = 256,
        probe_max_seconds: float = 5.0,
    ) -> None:
        self._engines: Engines = create_engines(url, busy_timeout_ms=busy_timeout_ms)
        path = sqlite_path(url)
        runner: BatchRunner = (
            SqliteRunner(path, busy_timeout_ms=busy_timeout_ms)
            if path is not None
            else SqlAlchemyRunner(self._engines.write)
        )
        self._reads: Reads = (
            SqliteReads(path, busy_timeout_ms=busy_timeout_ms)
            if path is not None
            else EngineReads(self._engines.read)
        )
        self._health = StoreHealth(probe_max_seconds=probe_max_seconds)
        self._writer = GroupWriter(
            runner, max_batch=max_batch, health=self._health, path=path, probe=write_probe
        )
        self._stack = AsyncExitStack()
        self.search = SearchStore(self._engines.read, self._writer if path else None)
        self.reviews = ReviewStore(self._engines.read, self._writer, self._reads)
        self.curator = CuratorStore(self._engines.read, self._writer)
        self.cron = CronStore(self._engines.read, self._writer)
        self.pairing = PairingStore(self._engines.read, self._writer, self._reads)
        self.approvals = ApprovalStore(self._engines.read, self._writer)
        self.people = PeopleStore(self._engines.read, self._writer, sqlite_file=path)
        self.usage = UsageStore(self._engines.read, self._writer, self._reads)
        self.audit = AuditStore(self._engines.read, self._writer)

    async def __aenter__(self) -> SessionDB:
        try:
            await self._stack.enter_async_context(self._writer)
        except BaseException:
            await self._engines.dispose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self._stack.aclose()
        finally:
            try:
                await self._reads.close()
            finally:
                await self._engines.dispose()

    @property
    def health(self) -> StoreHealth:
        """Whether the store can write now (``StoreHealth.problem``), for readiness."""
        return self._health

    @property
    def commits(self) -> int:
        """Write transactions committed so far (for metrics)."""
        return self._writer.commits

    async def write(self, op: WriteOp[T], *, later: bool = False) -> T:
        """Run a write operation in the next group-committed transaction; ``later``:
        it need not start one of its own (``GroupWriter.submit``)."""
        return await self._writer.run(op, later=later)

    async def ping(self) -> None:
        """Raise if the database cannot be reached."""
        try:
            async with self._engines.read.connect() as conn:
                await conn.execute(text("SELECT 1"))
        except (SQLAlchemyError, OSError) as exc:
            raise StoreError(f"SessionDB unreachable: {exc.__class__.__name__}") from exc

    # inbox
    async def accept(self, msg: InboundMessage, key: str) -> Accepted:
        return await self.write(lambda c: inbox_ops.accept(c, msg, key))

    async def take(self, inbox_id: int) -> None:
        """Record, durably, that a turn of ``inbox_id`` starts (``inbox.take``)."""
        await self.write(lambda tx: inbox_ops.take(tx, inbox_id))

    async def release(self, inbox_ids: Sequence[int]) -> None:
        """Undo one ``take`` of each of ``inbox_ids`` still pending (``inbox.release``)."""
        await self.write(lambda tx: inbox_ops.release(tx, inbox_ids))

    async def pending_inbox(self, up_to: int | None = None) -> list[InboxItem]:
        async with self._engines.read.connect() as conn:
            return await inbox_ops.pending(conn, up_to)

    async def newest_inbox_id(self) -> int:
        async with self._engines.read.connect() as conn:
            return await inbox_ops.newest_id(conn)

    async def last_seen(
        self, platform: str, since: float, until: float, limit: int = 500
    ) -> list[LastSeen]:
        async with self._engines.read.connect() as conn:
            return await inbox_ops.last_seen(conn, platform, since, until, limit)

    async def inbox_item(self, inbox_id: int) -> InboxItem | None:
        async with self._engines.read.connect() as conn:
            return await inbox_ops.get(conn, inbox_id)

    # sessions
    async def active_session(self, key: str) -> SessionRow | None:
        return await self._reads.run(lambda tx: session_ops.active(tx, key))

    async def session(self, session_id: str) -> SessionRow | None:
        async with self._engines.read.connect() as conn:
            return await session_ops.get(conn, session_id)

    async def recent_sessions(self, limit: int = 20) -> list[SessionRow]:
        async with self._engines.read.connect() as conn:
            return await session_ops.recent(conn, limit)

    async def active_session_count(self) -> int:
        """How many sessions are open right now, in every chat (for ``chatgate status``)."""
        async with self._engines.read.connect() as conn:
            return await session_ops.count_active(conn)

    async def lineage(self, session_id: str) -> list[LineageEntry]:
        """The session's compaction family: its ancestors from the root down, then its
        descendants depth-first, each with its depth and stored message count."""
        async with self._engines.read.connect() as conn:
            return await lineage_of(conn, session_id)

    async def open_session(self, new: SessionRow) -> SessionRow:
        return await self.write(lambda c: session_ops.open_session(c, new))

    async def freeze_tools(self, session_id: str, specs: str) -> str:
        """Give a session opened before tool lists were frozen its list (JSON); the
        session's list as stored, which a racing replica may have set first."""
        return await self.write(lambda tx: session_ops.freeze_tools(tx, session_id, specs))

    async def compact(
        self, parent_id: str, at: float, child: SessionRow, messages: Sequence[NewMessage]
    ) -> SessionRow:
        """End ``parent_id`` and open its child with ``messages``, in one transaction."""
        return await self.write(lambda tx: lineage.compact(tx, parent_id, at, child, messages))

    async def record_detached(self, row: SessionRow, messages: Sequence[NewMessage]) -> None:
        """Store a finished one-off session (a scheduled run) and its transcript at once."""
        await self.write(lambda tx: lineage.record_detached(tx, row, messages))

    async def history(self, session_id: str) -> list[StoredMessage]:
        return await self._reads.run(lambda tx: session_ops.history(tx, session_id))

    async def tool_results(self, session_id: str, tool_name: str) -> list[str | None]:
        async with self._engines.read.connect() as conn:
            return await session_ops.tool_results(conn, session_id, tool_name)

    # turns and replies
    async def finish_turn(self, outcome: TurnOutcome) -> list[OutboundMessage]:
        return await self.write(lambda c: write_turn(c, outcome))

    async def add_notices(
        self, target: ChatTarget, texts: Sequence[str], at: float, session_id: str | None = None
    ) -> list[OutboundMessage]:
        """Queue messages for a chat that no inbound message asked for."""
        return await self.write(
            lambda tx: outbox_ops.add_notices(tx, target, session_id, texts, at)
        )

    async def replies_for(self, inbox_id: int) -> list[OutboundMessage]:
        async with self._engines.read.connect() as conn:
            return await outbox_ops.for_inbox(conn, inbox_id)

    async def replies_after(
        self, *, platform: str, route: str | None, chat_id: str, after: int, limit: int = 100
    ) -> list[OutboundMessage]:
        async with self._engines.read.connect() as conn:
            return await outbox_ops.for_chat_after(
                conn, platform=platform, route=route, chat_id=chat_id, after=after, limit=limit
            )

    async def pending_replies(
        self, platform: str, limit: int = 100, after: int = 0
    ) -> list[OutboundMessage]:
        async with self._engines.read.connect() as conn:
            return await outbox_ops.pending_for(conn, platform, limit, after)

    async def pending_reply_count(self) -> int:
        """Replies of every platform not delivered yet (the outbox backlog)."""
        async with self._engines.read.connect() as conn:
            return await outbox_ops.count_pending(conn)

    async def outbound_file(
        self, file_id: str, *, platform: str, route: str | None
    ) -> tuple[OutboundFile, str] | None:
        """A file sent with a reply to a chat of ``platform`` (and ``route``), with the
        chat's id; None when there is none by that id there."""
        async with self._engines.read.connect() as conn:
            return await outbox_ops.file_of(conn, file_id, platform=platform, route=route)

    async def note_preview(self, inbox_id: int, preview_id: str) -> None:
        """Record the platform message showing a streamed preview of ``inbox_id``'s reply."""
        await self.write(lambda c: inbox_ops.set_preview(c, inbox_id, preview_id))

    async def note_parts_sent(self, outbox_id: int, parts: int) -> None:
        await self.write(lambda c: outbox_ops.note_parts_sent(c, outbox_id, parts))

    async def mark_failed(self, ids: Sequence[int], error: str) -> None:
        await self.write(lambda c: outbox_ops.mark_failed(c, ids, error))

    async def mark_delivered(
        self,
        ids: Sequence[int],
        at: float,
        platform_ids: Sequence[str | None] = (),
        *,
        later: bool = False,
    ) -> None:
        await self.write(lambda c: outbox_ops.mark_delivered(c, ids, at, platform_ids), later=later)

    async def prune_queue(self, before: float, limit: int = 500) -> QueuePruned:
        """Delete the delivery queue's handled messages and sent replies older than
        ``before`` (``core.store.queue_retention``), ``limit`` rows a transaction; how
        many of each went."""
        messages = replies = 0
        for step in (queue_retention.prune_messages, queue_retention.prune_lone_replies):
            after: int | None = 0
            while after is not None:
                batch = await self.write(partial(step, before=before, after=after, limit=limit))
                messages, replies = messages + batch.messages, replies + batch.replies
                after = batch.next_after
        return QueuePruned(messages, replies, None)
