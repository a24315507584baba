"""What the home keeps about a person outside the SessionDB: each kind a ``PersonArea``.

``people show`` / ``export`` / ``forget`` walk ``file_areas(home)`` after the SessionDB's
``DB_AREAS``. An area lists its records as JSON-able dicts, names the files an export
copies, and forgets: deletes and says how many records went.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock

from core.memory.approval import PendingWrites
from core.memory.operations import parse_entries
from core.memory.profile import person_file
from core.memory.providers.notes_store import NotesStore
from core.people.person import Person

Rows = list[dict[str, Any]]


class PersonArea(Protocol):
    """One kind of data about people kept in the home's files."""

    @property
    def name(self) -> str: ...

    def rows(self, person: Person) -> Rows: ...

    def files(self, person: Person) -> list[Path]: ...

    def forget(self, person: Person) -> int: ...


class UserProfileArea:
    """Their own USER.md (``memory.user_scope: per_user``). The shared profile USER.md
    of ``user_scope: profile`` belongs to no one person and is not touched."""

    name = "user_profile"

    def __init__(self, memories: Path) -> None:
        self._memories = memories

    def rows(self, person: Person) -> Rows:
        path = self._path(person)
        if not path.is_file():
            return []
        return [{"entry": e} for e in parse_entries(path.read_text(encoding="utf-8"))]

    def files(self, person: Person) -> list[Path]:
        path = self._path(person)
        return [path] if path.is_file() else []

    def forget(self, person: Person) -> int:
        path = self._path(person)
        gone = len(self.rows(person))
        lock = path.with_name(path.name + ".lock")
        if path.parent.is_dir():
            with FileLock(lock):  # the memory tool's writers take the same lock
                path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            lock.unlink()
        return gone

    def _path(self, person: Person) -> Path:
        return person_file(self._memories, person.platform, person.user_id)


class PendingWritesArea:
    """Staged memory writes waiting for approval that would change their USER.md."""

    name = "pending_writes"

    def __init__(self, home: Path) -> None:
        self._pending = PendingWrites(home)

    def rows(self, person: Person) -> Rows:
        return [w.to_json() for w in self._theirs(person)]

    def files(self, person: Person) -> list[Path]:
        return []

    def forget(self, person: Person) -> int:
        theirs = self._theirs(person)
        for write in theirs:
            self._pending.reject(write.id)
        return len(theirs)

    def _theirs(self, person: Person) -> list[Any]:
        mine = person_file(self._pending.memories, person.platform, person.user_id)
        return [w for w in self._pending.list() if w.path == mine]


class NotesArea:
    """The ``notes`` memory provider's exchanges filed under them."""

    name = "notes"

    def __init__(self, path: Path) -> None:
        self._path = path

    def rows(self, person: Person) -> Rows:
        return self._store().exchanges_of(str(person)) if self._path.is_file() else []

    def files(self, person: Person) -> list[Path]:
        return []

    def forget(self, person: Person) -> int:
        return self._store().forget(str(person)) if self._path.is_file() else 0

    def _store(self) -> NotesStore:
        return NotesStore(self._path)


def file_areas(home: Path) -> list[PersonArea]:
    """Every area of a home, whatever the settings say now: data written under other
    settings is still theirs."""
    return [
        UserProfileArea(home / "memories"),
        PendingWritesArea(home),
        NotesArea(home / "memory_provider" / "notes.sqlite3"),
    ]
