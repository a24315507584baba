"""Where a chat's memory lives: MEMORY.md for the agent, USER.md per profile or per person.

``MemoryFiles`` maps a (platform, user) to its two stores under
``$CHATGATE_HOME/memories``; with ``user_scope="per_user"`` each person gets their own
``memories/users/<platform>-<user_id>.md`` so a bot shared by a server keeps people apart.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from core.memory.store import MemoryStore
from core.record import record

UserScope = Literal["profile", "per_user"]
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@record
class MemoryLimits:
    memory_chars: int = 2200
    user_chars: int = 1375
    user_scope: UserScope = "profile"


class MemoryFiles:
    """The memory stores of one chatgate home."""

    def __init__(self, home: Path, limits: MemoryLimits) -> None:
        self.root = home / "memories"
        self.limits = limits
        self._agent = MemoryStore(
            self.root / "MEMORY.md",
            limit=limits.memory_chars,
            label="Memory",
            heading="MEMORY (your personal notes)",
        )

    def stores_for(self, platform: str, user_id: str) -> dict[str, MemoryStore]:
        """The ``memory`` and ``user`` stores a person in a chat reads and writes."""
        return {"memory": self._agent, "user": self._user_store(platform, user_id)}

    def snapshot(self, platform: str, user_id: str) -> list[str]:
        """The prompt blocks frozen into a new session (empty stores render nothing)."""
        blocks = (s.render_snapshot() for s in self.stores_for(platform, user_id).values())
        return [b for b in blocks if b]

    def _user_store(self, platform: str, user_id: str) -> MemoryStore:
        if self.limits.user_scope == "per_user":
            path = person_file(self.root, platform, user_id)
        else:
            path = self.root / "USER.md"
        return MemoryStore(
            path,
            limit=self.limits.user_chars,
            label="User profile",
            heading="USER PROFILE (who the user is)",
        )


def person_file(root: Path, platform: str, user_id: str) -> Path:
    """A person's own USER.md under ``root`` (``memories/``) with ``user_scope: per_user``."""
    name = _UNSAFE.sub("_", f"{platform}-{user_id}")[:200]
    return root / "users" / f"{name}.md"
