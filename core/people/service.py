"""One person's data: shown, exported, forgotten (``chatgate people``, ``/forget-me``).

Forgetting runs the SessionDB's areas in one transaction (``SessionDB.people``), then the
home's file areas, marks the touched sessions stale for a running gateway, checkpoints
the WAL, and verifies: ``show`` finds nothing left, and every word that only the person
had written (checked with the search index before) is found nowhere afterwards. A
verification that fails is a ``StoreError``, never a quiet success.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import Any

from core.clock import Clock
from core.errors import StoreError
from core.people.files import PersonArea
from core.people.marks import ForgetMarks
from core.people.person import Person
from core.record import record
from core.store.db import SessionDB
from core.store.people.areas import ForgetContext
from core.store.search.matches import SearchScope

_WORD = re.compile(r"[^\W_]{5,}")
_PROBE_WORDS = 20
_PROBE_LIMIT = 200
# A USER.md entry this long found in a stored prompt means the prompt carries it.
_MIN_ENTRY = 12


@record
class PersonReport:
    """Every area's records about one person: SessionDB areas first, then files."""

    person: Person
    areas: dict[str, list[dict[str, Any]]]

    def counts(self) -> dict[str, int]:
        return {name: len(rows) for name, rows in self.areas.items()}


@record
class ForgetReport:
    counts: dict[str, int]
    # Their messages still waiting for a turn in a running gateway, kept.
    waiting: int = 0
    # Words only they had written, searched for afterwards and found nowhere.
    probed: tuple[str, ...] = field(default_factory=tuple)


class People:
    """See the module docstring."""

    def __init__(
        self,
        db: SessionDB,
        areas: Sequence[PersonArea],
        marks: ForgetMarks,
        clock: Clock,
        *,
        salt: Callable[[], bytes] | None = None,
    ) -> None:
        self._salt = salt
        self._db = db
        self._areas = areas
        self._marks = marks
        self._clock = clock

    async def show(self, person: Person) -> PersonReport:
        rows = await self._db.people.rows(person)
        areas = dict(rows.areas)
        for area in self._areas:
            areas[area.name] = area.rows(person)
        return PersonReport(person, areas)

    def files(self, person: Person) -> dict[str, list[Any]]:
        """The files an export copies, by area."""
        return {area.name: area.files(person) for area in self._areas}

    async def forget(self, person: Person, *, keep_inbox_id: int | None = None) -> ForgetReport:
        before = await self.show(person)
        probes = await self._probe_words(before)
        ctx = ForgetContext(
            at=self._clock.now(),
            keep_inbox_id=keep_inbox_id,
            end_sessions=await self._prompts_with_their_profile(before),
            salt=self._salt() if self._salt is not None else b"",
        )
        done = await self._db.people.forget(person, ctx)
        counts = dict(done.counts)
        for area in self._areas:
            counts[area.name] = area.forget(person)
        self._marks.add(done.session_keys, ctx.at)
        await self._db.people.reclaim()
        await self._verify(person, probes, keep_inbox_id)
        return ForgetReport(counts, done.waiting, probes)

    async def _probe_words(self, report: PersonReport) -> tuple[str, ...]:
        """Up to 20 words of their messages that no message outside theirs holds."""
        theirs = {row["id"] for row in report.areas.get("messages", [])}
        words: list[str] = []
        for row in report.areas.get("messages", []):
            if row["role"] == "user" and row["user_id"] == report.person.user_id:
                words += [w for w in _WORD.findall(row["content"] or "") if w not in words]
        kept = []
        async with self._db.search.reading() as reader:
            for word in words:
                found = await reader.find_messages(word, _EVERYWHERE, limit=_PROBE_LIMIT)
                if found and {m.message_id for m in found} <= theirs:
                    kept.append(word)
                if len(kept) == _PROBE_WORDS:
                    break
        return tuple(kept)

    async def _prompts_with_their_profile(self, report: PersonReport) -> frozenset[str]:
        """Active shared sessions whose stored prompt holds one of their USER.md entries."""
        entries = [r["entry"] for r in report.areas.get("user_profile", [])]
        entries = [e for e in entries if len(e) >= _MIN_ENTRY]
        carrying = set()
        for row in report.areas.get("sessions", []):
            if row["part"] != "shared" or row["ended_at"] is not None or not entries:
                continue
            session = await self._db.session(row["id"])
            if session is not None and any(e in session.system_prompt for e in entries):
                carrying.add(row["id"])
        return frozenset(carrying)

    async def _verify(self, person: Person, probes: Sequence[str], kept: int | None) -> None:
        after = await self.show(person)
        left = {
            name: n
            for name, n in after.counts().items()
            if n and not (name == "inbox" and _only_kept(after.areas[name], kept))
        }
        if left:
            raise StoreError(f"forgetting {person} left rows behind: {left}")
        async with self._db.search.reading() as reader:
            for word in probes:
                if await reader.find_messages(word, _EVERYWHERE, limit=1):
                    raise StoreError(f"forgetting {person}: search still finds their words")


_EVERYWHERE = SearchScope(platform="", chat_id="", thread_id=None, user_id="", mode="all")


def _only_kept(rows: list[dict[str, Any]], kept: int | None) -> bool:
    """Rows left in the inbox are the answer in progress or messages still queued."""
    return all(r["id"] == kept or r["status"] == "pending" for r in rows)
