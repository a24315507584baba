"""The ``## Skills (mandatory)`` prompt index and its two caches.

The in-process LRU trusts its entries until ``invalidate()``; the one skill writer,
``core/skills/store.py``'s ``SkillStore``, owns a cache and calls it after every write,
which re-renders every index the snapshot holds and rewrites it with the tree's new
manifest, so the file on disk stays current. The disk snapshot
(``skills/.skills_prompt_snapshot.json``) survives restarts: a new process reads it
instead of every SKILL.md, while its manifest (relative path, ``mtime_ns`` and size of
every SKILL.md) still matches the tree. Edits made by hand outside the writer change the
manifest, so the stale snapshot is rebuilt on the next start; a snapshot that cannot be
read (corrupt, another version, wrong shape) is ignored and rewritten.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from core.memory.store import write_atomically
from core.skills.library import SKILL_FILE, Library, Skill, load_library, skill_folders

logger = logging.getLogger(__name__)

HEADER = "## Skills (mandatory)"
# The seed's mandatory-load wording, kept word for word: loading is an obligation.
INSTRUCTION = (
    "Before replying, scan the skills below. If a skill matches or is even partially "
    "relevant to your task, you MUST load it with skill_view(name) and follow its "
    "instructions. Err on the side of loading — it is always better to have context you "
    "don't need than to miss critical steps, pitfalls, or established workflows."
)
SNAPSHOT_NAME = ".skills_prompt_snapshot.json"
SNAPSHOT_VERSION = 1

CacheKey = tuple[str, frozenset[str], str, frozenset[str]]
Manifest = dict[str, list[int]]
Loader = Callable[..., Library]


def render_index(library: Library) -> str:
    listed = [skill for skill in library.skills if skill.visible]
    if not listed:
        return ""
    lines = [HEADER, "", INSTRUCTION]
    categories = sorted({skill.category for skill in listed}, key=lambda c: (c is not None, c))
    for category in categories:
        lines.append("")
        if category is not None:
            lines.append(f"### {category}")
        members = sorted((s for s in listed if s.category == category), key=lambda s: s.name)
        lines.extend(_index_line(skill) for skill in members)
    return "\n".join(lines) + "\n"


def _index_line(skill: Skill) -> str:
    if skill.broken:
        return f"- {skill.name}: [broken: {'; '.join(skill.problems)}]"
    return f"- {skill.name}: {skill.description}"


def manifest(skills_dir: Path) -> Manifest:
    """Relative path → [mtime_ns, size] for every SKILL.md the library would read."""
    entries: Manifest = {}
    for folder, _category in skill_folders(skills_dir):
        path = folder / SKILL_FILE
        with contextlib.suppress(FileNotFoundError):
            stat = path.stat()
            entries[path.relative_to(skills_dir).as_posix()] = [stat.st_mtime_ns, stat.st_size]
    return entries


class SkillsIndexCache:
    """An LRU of rendered indexes in front of a per-folder disk snapshot."""

    def __init__(self, max_entries: int = 32, loader: Loader = load_library) -> None:
        self._max_entries = max_entries
        self._loader = loader
        self._entries: OrderedDict[CacheKey, str] = OrderedDict()
        self._folders: set[Path] = set()
        self._lock = threading.Lock()

    def index_for(
        self,
        skills_dir: Path,
        platform: str,
        enabled_tools: Collection[str],
        disabled: Collection[str] = (),
    ) -> str:
        folder = skills_dir.resolve()
        key: CacheKey = (str(folder), frozenset(enabled_tools), platform, frozenset(disabled))
        with self._lock:
            self._folders.add(folder)
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
            text = self._from_snapshot(folder, key)
            self._entries[key] = text
            if len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
            return text

    def invalidate(self, skills_dir: Path | None = None) -> None:
        """The skills changed: drop every cached index and rebuild the snapshot of every
        folder this cache has served (and of ``skills_dir``) for the indexes it held."""
        with self._lock:
            served = list(self._entries)
            self._entries.clear()
            folders = set(self._folders)
            if skills_dir is not None:
                folders.add(skills_dir.resolve())
            for folder in folders:
                self._rebuild_snapshot(folder, served)

    def _rebuild_snapshot(self, folder: Path, served: Collection[CacheKey]) -> None:
        if not folder.is_dir():
            with contextlib.suppress(FileNotFoundError):
                (folder / SNAPSHOT_NAME).unlink()
            return
        slots = set(_read_snapshot(folder).get("indexes", {}))
        slots.update(_snapshot_slot(key) for key in served if key[0] == str(folder))
        current = manifest(folder)  # before reading: an edit meanwhile leaves it stale
        indexes = {}
        for slot in sorted(slots):
            key = _slot_key(folder, slot)
            if key is None:
                continue
            library = self._loader(folder, platform=key[2], enabled_tools=key[1], disabled=key[3])
            indexes[slot] = render_index(library)
            self._entries[key] = indexes[slot]
        _write_snapshot(
            folder, {"version": SNAPSHOT_VERSION, "manifest": current, "indexes": indexes}
        )

    def _from_snapshot(self, folder: Path, key: CacheKey) -> str:
        current = manifest(folder)
        snapshot = _read_snapshot(folder)
        if snapshot.get("manifest") != current:
            snapshot = {"version": SNAPSHOT_VERSION, "manifest": current, "indexes": {}}
        indexes: dict[str, str] = snapshot["indexes"]
        slot = _snapshot_slot(key)
        if slot in indexes:
            return indexes[slot]
        library = self._loader(folder, platform=key[2], enabled_tools=key[1], disabled=key[3])
        indexes[slot] = render_index(library)
        _write_snapshot(folder, snapshot)
        return indexes[slot]


def _snapshot_slot(key: CacheKey) -> str:
    _folder, enabled, platform, disabled = key
    return json.dumps([platform, sorted(enabled), sorted(disabled)])


def _slot_key(folder: Path, slot: str) -> CacheKey | None:
    """The cache key a snapshot slot was written for; None for a slot that is not one."""
    try:
        platform, enabled, disabled = json.loads(slot)
    except (ValueError, TypeError):
        return None
    names = (
        [*enabled, *disabled] if isinstance(enabled, list) and isinstance(disabled, list) else []
    )
    if not isinstance(platform, str) or not all(isinstance(n, str) for n in names):
        return None
    return (str(folder), frozenset(enabled), platform, frozenset(disabled))


def _read_snapshot(folder: Path) -> dict[str, Any]:
    """The snapshot on disk, or {} when there is none or it is not one this code wrote."""
    try:
        data = json.loads((folder / SNAPSHOT_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != SNAPSHOT_VERSION:
        return {}
    indexes, entries = data.get("indexes"), data.get("manifest")
    valid = (
        isinstance(indexes, dict)
        and all(isinstance(text, str) for text in indexes.values())
        and isinstance(entries, dict)
    )
    return data if valid else {}


def _write_snapshot(folder: Path, snapshot: dict[str, Any]) -> None:
    if not folder.is_dir():
        return
    try:
        write_atomically(folder / SNAPSHOT_NAME, json.dumps(snapshot, sort_keys=True, indent=1))
    except OSError as error:
        # The index is still correct without the snapshot; only the next start is slower.
        logger.warning("cannot write skills snapshot in %s: %s", folder, error)
