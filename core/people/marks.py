"""Telling a running gateway which cached transcripts a forgetting made stale.

``chatgate people forget`` runs in its own process while the gateway keeps each active
session's transcript in memory (``SessionKeeper``). After the SessionDB transaction
commits, the forgetting appends one JSON line of the session keys it touched to
``$CHATGATE_HOME/people/forgotten.jsonl``, then rings a bell: it adds one to the eight-byte
count in ``forgotten.jsonl.count`` beside it. The gateway maps that file into memory and
reads the count before each turn takes its session; only when it moved does it read the
new lines and drop the cached sessions of their keys, so their next turn reads the store
again. A forgetting in the gateway itself (``/forget-me``) does the same. The files hold
session keys only (platform and chat ids), never text.

Reading the count is a memory read, not a system call. A ``stat`` of the marks file
before every turn, as this did at first, let the SessionDB writer's thread take the
interpreter's lock from the event loop once a turn, which cost about 5 % of the
gateway's throughput (``bench/throughput.py``). Where the count cannot be mapped (a
read-only home, a file system without shared maps) the marks file is checked every turn
as before. The bell must stay where it is while the gateway runs, like ``state.db``: a
gateway does not hear a bell file made anew under it.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import struct
from pathlib import Path

from filelock import FileLock

_COUNT = struct.Struct("<Q")


class ForgetMarks:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen = self._size()
        self._bell: _Bell | None = None  # mapped at the first look (the gateway only)
        self._heard = 0

    def add(self, session_keys: tuple[str, ...] | list[str], at: float) -> None:
        """Record that ``session_keys``' cached transcripts are stale."""
        if not session_keys:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"at": at, "keys": [key_digest(k) for k in session_keys]}) + "\n"
        with FileLock(self.path.with_name(self.path.name + ".lock")):
            with self.path.open("a") as out:
                out.write(line)
            _ring(bell_path(self.path))  # after the line is written: a reader finds it

    def stale_keys(self) -> set[str]:
        """Digests (``key_digest``) of the keys marked since the last call (or since this
        object was made)."""
        if not self._rung():
            return set()
        size = self._size()
        if size <= self._seen:
            self._seen = min(self._seen, size)
            return set()
        with self.path.open("rb") as marks:
            marks.seek(self._seen)
            new = marks.read(size - self._seen)
        complete = new[: new.rfind(b"\n") + 1]  # a line still being written waits
        self._seen += len(complete)
        keys: set[str] = set()
        for line in complete.splitlines():
            try:
                keys.update(str(k) for k in json.loads(line)["keys"])
            except (ValueError, KeyError, TypeError):
                continue
        return keys

    def _rung(self) -> bool:
        """Whether marks may have been added since the last look: the first look, a
        bell that rang, or no bell to listen to."""
        bell = self._bell
        if bell is None:
            self._bell = bell = _Bell.open(bell_path(self.path))
            self._heard = bell.count()
            return True
        count = bell.count()
        if count == self._heard and bell.mapped:
            return False
        self._heard = count
        return True

    def _size(self) -> int:
        try:
            return os.stat(self.path).st_size
        except FileNotFoundError:
            return 0


class _Bell:
    """The count beside the marks file, mapped read-only (see the module docstring)."""

    def __init__(self, view: mmap.mmap | None) -> None:
        self._view = view
        self.mapped = view is not None

    @classmethod
    def open(cls, path: Path) -> _Bell:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            return cls(None)
        try:
            if os.fstat(fd).st_size < _COUNT.size:  # a fresh file: room for the count
                os.ftruncate(fd, _COUNT.size)
            return cls(mmap.mmap(fd, _COUNT.size, access=mmap.ACCESS_READ))
        except (OSError, ValueError):
            return cls(None)
        finally:
            os.close(fd)  # the map keeps the file

    def count(self) -> int:
        view = self._view
        return -1 if view is None else int(_COUNT.unpack(view[: _COUNT.size])[0])


def _ring(path: Path) -> None:
    """Add one to the count in ``path`` (made if missing); under the marks' file lock."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        raw = os.pread(fd, _COUNT.size, 0)
        count = _COUNT.unpack(raw)[0] if len(raw) == _COUNT.size else 0
        os.pwrite(fd, _COUNT.pack((count + 1) % (1 << 64)), 0)
    finally:
        os.close(fd)


def bell_path(marks: Path) -> Path:
    """The file whose count a forgetting moves after adding to ``marks``."""
    return marks.with_name(marks.name + ".count")


def key_digest(session_key: str) -> str:
    """How a session key is written to the marks file."""
    return hashlib.sha256(session_key.encode()).hexdigest()


def forget_marks_path(home: Path) -> Path:
    """Where the home's forgettings mark stale session keys."""
    return home / "people" / "forgotten.jsonl"
