"""The audit's secret salt: a file under the home, made on first use, readable by the
owner only. Forgotten people are filed in the audit under ``Person.pseudonym(salt)``:
the same person forgotten twice gets the same hash, which nobody can reverse without
the file (and nobody can recompute once it is deleted)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

_BYTES = 32


def salt_path(home: Path) -> Path:
    return home / "audit.salt"


def audit_salt(home: Path) -> bytes:
    """The home's salt, made now if there is none (0600)."""
    path = salt_path(home)
    try:
        return bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = secrets.token_hex(_BYTES)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return bytes.fromhex(path.read_text().strip())
    with os.fdopen(fd, "w") as out:
        out.write(fresh + "\n")
    return bytes.fromhex(fresh)
