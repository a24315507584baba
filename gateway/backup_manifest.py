"""What a backup archive says about itself: ``manifest.json``.

The manifest names chatgate's version, the schema revision of the database snapshot,
counts a restore checks again (sessions, messages and inbox rows in the snapshot;
skills, memory entries and pending writes among the files) and the SHA-256 of every
other member. A restore refuses an archive whose members or counts disagree with it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import PurePosixPath
from typing import Any

from core.errors import BackupError
from core.memory.operations import parse_entries

MANIFEST = "manifest.json"
DATABASE = "state.db"
FORMAT = 1
MEMORY_FILES = frozenset({"MEMORY.md", "USER.md"})


@dataclass
class Manifest:
    """The contents of ``manifest.json`` (see the module docstring)."""

    created_at: str
    database: str  # "sqlite" (the snapshot is ``state.db``) or "postgresql" (not included)
    schema_revision: str | None
    counts: dict[str, int]
    files: dict[str, str]  # member path -> sha256
    removed_from_config: list[str] = field(default_factory=list)
    chatgate_version: str = field(default_factory=lambda: chatgate_version())
    format: int = FORMAT

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=2, sort_keys=True).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> Manifest:
        try:
            data: dict[str, Any] = json.loads(raw)
            if data.get("format") != FORMAT:
                raise BackupError(f"unknown backup format {data.get('format')!r}")
            return cls(**data)
        except (ValueError, TypeError) as exc:
            raise BackupError("the archive's manifest.json is not readable") from exc


def chatgate_version() -> str:
    try:
        return metadata.version("chatgate")
    except metadata.PackageNotFoundError:
        return "unknown"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_counts(files: Mapping[str, bytes]) -> dict[str, int]:
    """Skills, memory entries and pending writes among archived files (path -> bytes)."""
    paths = {name: PurePosixPath(name) for name in files}
    skills = sum(
        1
        for p in paths.values()
        if len(p.parts) == 3 and p.parts[0] == "skills" and p.name == "SKILL.md"
        if not p.parts[1].startswith(".")
    )
    memory = sum(
        len(parse_entries(files[name].decode("utf-8", "replace")))
        for name, p in paths.items()
        if p.parts[0] == "memories" and p.name in MEMORY_FILES
    )
    pending = sum(1 for p in paths.values() if p.parts[0] == "pending" and p.suffix == ".json")
    return {"skills": skills, "memory_entries": memory, "pending_writes": pending}
