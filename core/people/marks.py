"""Telling a running gateway which cached transcripts a forgetting made stale.

``chatgate people forget`` runs in its own process while the gateway keeps each active
session's transcript in memory (``SessionKeeper``). After the SessionDB transaction
commits, the forgetting appends one JSON line of the session keys it touched to
``$CHATGATE_HOME/people/forgotten.jsonl``; the gateway stats the file before each turn
takes its session (a ``stat``, no database read) and, when the file grew, drops the
cached sessions of the keys in the new lines, so their next turn reads the store again.
A forgetting in the gateway itself (``/forget-me``) writes the same line. The file holds
session keys only (platform and chat ids), never text.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from filelock import FileLock


class ForgetMarks:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen = self._size()

    def add(self, session_keys: tuple[str, ...] | list[str], at: float) -> None:
        """Record that ``session_keys``' cached transcripts are stale."""
        if not session_keys:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"at": at, "keys": [key_digest(k) for k in session_keys]}) + "\n"
        with FileLock(self.path.with_name(self.path.name + ".lock")), self.path.open("a") as out:
            out.write(line)

    def stale_keys(self) -> set[str]:
        """Digests (``key_digest``) of the keys marked since the last call (or since this
        object was made)."""
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

    def _size(self) -> int:
        try:
            return os.stat(self.path).st_size
        except FileNotFoundError:
            return 0


def key_digest(session_key: str) -> str:
    """How a session key is written to the marks file."""
    return hashlib.sha256(session_key.encode()).hexdigest()


def forget_marks_path(home: Path) -> Path:
    """Where the home's forgettings mark stale session keys."""
    return home / "people" / "forgotten.jsonl"
