"""A folder of staged writes waiting for a person's approval (memory and skills).

Each staged write is one JSON file ``<id>.json`` written atomically; a lock file
serialises staging, approving and rejecting, so no write is applied twice by two
reviewers at once. What a write means is the caller's business.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock

from core.memory.store import write_atomically

T = TypeVar("T")
ID_PATTERN = re.compile(r"[0-9a-f]{8}")
UNREADABLE = (OSError, ValueError, KeyError, TypeError)

log = logging.getLogger(__name__)


class PendingFolder:
    """Staged writes as ``<id>.json`` files under ``folder``."""

    def __init__(self, folder: Path, kind: str) -> None:
        self.folder = folder
        self._kind = kind  # for log lines: "memory", "skill"
        self._lock = FileLock(folder / ".lock")

    @contextmanager
    def locked(self) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._lock:
            yield

    def new_id(self) -> str:
        while True:
            candidate = secrets.token_hex(4)
            if not self.file(candidate).exists():
                return candidate

    def path(self, pending_id: str) -> Path | None:
        """The file of ``pending_id``, or None when it is not a well-formed id."""
        return self.file(pending_id) if ID_PATTERN.fullmatch(pending_id) else None

    def file(self, pending_id: str) -> Path:
        return self.folder / f"{pending_id}.json"

    def read(
        self, path: Path, parse: Callable[[dict[str, Any]], T], id_of: Callable[[T], str]
    ) -> T:
        """Parse one staged file; its id must match its name."""
        item = parse(json.loads(path.read_text(encoding="utf-8")))
        if f"{id_of(item)}.json" != path.name:
            raise ValueError(f"its id {id_of(item)!r} does not match the file name")
        return item

    def read_all(self, parse: Callable[[dict[str, Any]], T], id_of: Callable[[T], str]) -> list[T]:
        """Every staged write; unreadable files are logged and skipped."""
        if not self.folder.is_dir():
            return []
        items: list[T] = []
        for path in self.folder.glob("*.json"):
            try:
                items.append(self.read(path, parse, id_of))
            except UNREADABLE as exc:
                log.warning(
                    "skipping unreadable pending %s write %s: %s", self._kind, path.name, exc
                )
        return items

    def save(self, pending_id: str, data: dict[str, Any]) -> None:
        text = json.dumps(data, ensure_ascii=False, indent=2)
        write_atomically(self.file(pending_id), text + "\n")
