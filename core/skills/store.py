"""The one writer of a skills folder's skill content, and the owner of its prompt index.

Every change to what ``skills/`` holds goes through one ``SkillStore``: ``skill_manage``
batches (the model's and approved staged ones, consolidation merges included), archiving
and restoring, and a snapshot rollback swapping a whole tree in. After each write the
store rebuilds its index cache and the disk snapshot (``.skills_prompt_snapshot.json``),
so the next session's ``## Skills`` index shows it and the next start reads a current
snapshot; no other module touches that cache.

Every user of one skills folder in a process must share one store. A store in another
process (the CLI) keeps its own cache: its writes rewrite the disk snapshot, but show
in this process's index only once this process writes too or restarts (see
``core/skills/index.py``). Usage telemetry (``.usage.json``) is not skill content;
``SkillUsage`` writes it under its own lock.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from core.skills.index import SkillsIndexCache
from core.skills.library import Library, load_library
from core.skills.manage import find_skill, locked_skills, manage_skills

ARCHIVE = ".archive"


class SkillStore:
    """The skills of one folder: its index and library to read, its only writer."""

    def __init__(self, skills_dir: Path) -> None:
        self.skills_dir = skills_dir
        self._index = SkillsIndexCache()

    def index(
        self, platform: str, enabled_tools: Collection[str], disabled: Collection[str] = ()
    ) -> str:
        """The ``## Skills (mandatory)`` block for a new session ("" with no visible skill)."""
        return self._index.index_for(self.skills_dir, platform, enabled_tools, disabled)

    def library(
        self, platform: str, enabled_tools: Collection[str], disabled: Collection[str] = ()
    ) -> Library:
        """Every installed skill, read now, with its visibility for this platform and tools."""
        return load_library(
            self.skills_dir, platform=platform, enabled_tools=enabled_tools, disabled=disabled
        )

    def manage(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Apply one ``skill_manage`` call, all or nothing; the payload is the tool's answer."""
        return manage_skills(self.skills_dir, arguments, on_written=self._invalidate)

    def archive(self, name: str, at: datetime) -> Path | None:
        """Move live skill ``name`` to ``.archive/[<category>/]<name>``; None if there is none.

        An older archived copy of the same name is kept under a name dated ``at``.
        """
        with locked_skills(self.skills_dir, [name]):
            folder = find_skill(self.skills_dir, name)
            if folder is None:
                return None
            category = folder.parent.name if folder.parent != self.skills_dir else None
            root = self.skills_dir / ARCHIVE
            target = root / category / name if category else root / name
            with self._changing():
                if target.exists():
                    os.replace(target, target.with_name(f"{name}.{at.strftime('%Y%m%dT%H%M%SZ')}"))
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(folder, target)
            return target

    def restore(self, archived: Path) -> Path:
        """Move an archived skill folder back into the library, in the category it left."""
        name = archived.name
        category = archived.parent.name if archived.parent.name != ARCHIVE else None
        target = self.skills_dir / category / name if category else self.skills_dir / name
        with locked_skills(self.skills_dir, [name]), self._changing():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(archived, target)
        return target

    def replace_entries(self, current: Iterable[Path], replacement: Path, aside: Path) -> None:
        """Swap a tree in: move ``current`` (entries of the folder) into the empty folder
        ``aside``, then every entry of ``replacement`` into the skills folder."""
        moving = list(current)  # never iterate the folder while emptying it
        with self._changing():
            aside.mkdir()
            for entry in moving:
                if entry.is_symlink() or entry.is_file() or entry.is_dir():
                    os.replace(entry, aside / entry.name)
            for entry in replacement.iterdir():
                os.replace(entry, self.skills_dir / entry.name)

    @contextmanager
    def _changing(self) -> Iterator[None]:
        try:
            yield
        finally:
            # Even a move that failed part way may have changed the tree.
            self._invalidate()

    def _invalidate(self) -> None:
        self._index.invalidate(self.skills_dir)
