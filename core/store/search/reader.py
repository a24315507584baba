"""The search repository: every read ``session_search`` and ``chatgate sessions search``
make, each within one read transaction.

One tool call makes several queries (the caller's thread, the matches, their sessions,
their windows); they share one connection, so on SQLite they all read one snapshot and a
turn committing meanwhile cannot make a window disagree with the match it came from.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Collection, Sequence
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from core.errors import StoreError
from core.store.search import catalog, matches, queue, windows
from core.store.search.access import Reach
from core.store.search.catalog import RecentSession, SessionCard
from core.store.search.matches import Match, SearchScope
from core.store.search.windows import MessageLine
from core.store.writer import Writer

log = logging.getLogger(__name__)


class SearchReader:
    """The reads of one search, on one connection; see the module docstring."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def find_messages(
        self,
        query: str,
        scope: SearchScope,
        *,
        limit: int = 50,
        exclude_session_ids: Collection[str] = (),
    ) -> list[Match]:
        """User and assistant messages matching ``query`` in ``scope``, best first."""
        return await matches.find_messages(
            self._conn, query, scope, limit=limit, exclude_session_ids=exclude_session_ids
        )

    async def message_contents(self, message_ids: Sequence[int]) -> dict[int, str]:
        """The text of each of ``message_ids`` that exists, by id ("" for no text)."""
        return await windows.contents(self._conn, message_ids)

    async def thread_of(self, session_id: str) -> tuple[bool, str | None]:
        """Whether the session is stored, and its thread id."""
        return await catalog.thread_of(self._conn, session_id)

    async def session(self, session_id: str, reach: Reach) -> SessionCard | None:
        """The session, or None when it is missing or outside ``reach`` (alike)."""
        return await catalog.find(self._conn, session_id, reach)

    async def sessions(self, session_ids: set[str], reach: Reach) -> dict[str, SessionCard]:
        """Those of ``session_ids`` that are within ``reach``, by id."""
        return await catalog.find_many(self._conn, session_ids, reach)

    async def lineage_root(self, session_id: str) -> str:
        """The first session of the compaction chain ``session_id`` belongs to."""
        return await catalog.lineage_root(self._conn, session_id)

    async def recent_sessions(self, reach: Reach, limit: int) -> list[RecentSession]:
        """The ``limit`` most recently active sessions within ``reach``, newest first."""
        return await catalog.recent(self._conn, reach, limit)

    async def message_count(self, session_id: str) -> int:
        """How many messages the session holds, of every role."""
        return await windows.count_messages(self._conn, session_id)

    async def first_messages(self, session_id: str, n: int) -> list[MessageLine]:
        """The session's first ``n`` messages, oldest first."""
        return await windows.head(self._conn, session_id, n)

    async def last_messages(self, session_id: str, n: int) -> list[MessageLine]:
        """The session's last ``n`` messages, oldest first."""
        return await windows.tail(self._conn, session_id, n)

    async def has_message(self, session_id: str, message_id: int) -> bool:
        """Whether message ``message_id`` belongs to the session."""
        return await windows.has_message(self._conn, session_id, message_id)

    async def around(self, session_id: str, anchor_id: int, size: int) -> list[MessageLine]:
        """The anchor message with up to ``size`` messages either side, oldest first."""
        return await windows.around(self._conn, session_id, anchor_id, size)


class SearchStore:
    """The search repository of one SessionDB, over its read engine. ``writer``: on
    SQLite, the SessionDB's writer, which indexes queued messages (``queue``)."""

    def __init__(self, engine: AsyncEngine, writer: Writer | None = None) -> None:
        self._engine = engine
        self._writer = writer

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[SearchReader]:
        """A ``SearchReader`` whose queries share one connection (one snapshot on SQLite),
        taken once every committed message is indexed."""
        await self._index_queued()
        async with self._engine.connect() as conn:
            yield SearchReader(conn)

    async def _index_queued(self) -> None:
        if self._writer is None:
            return
        try:
            await self._writer.run(queue.index_all)
        except StoreError as exc:  # a store that cannot write can still be searched
            log.warning("searching without indexing the newest messages: %s", exc)
