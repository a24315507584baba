"""This build's head revision, read from the revision files without importing Alembic.

Start-up only needs to know whether the database is already at the head; importing
Alembic (with Mako and its script directory) to learn that costs ~0.3 s of CPU on every
start. Each file in ``versions/`` assigns ``revision`` and ``down_revision`` as
literals (Alembic's own template), so they are read with ``ast``. Anything unexpected
(no file, a value that is not a literal, several heads) answers None, and the caller
falls back to Alembic itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

VERSIONS = Path(__file__).resolve().parent / "versions"


def _literals(path: Path) -> dict[str, object]:
    """The module-level ``revision`` and ``down_revision`` of one revision file."""
    found: dict[str, object] = {}
    for node in ast.parse(path.read_bytes(), filename=str(path)).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if not isinstance(target, ast.Name):
                continue
            name, value = target.id, node.value
        else:
            continue
        if name in ("revision", "down_revision") and value is not None:
            found[name] = ast.literal_eval(value)
    return found


def _downs(value: object) -> set[str]:
    if value is None:
        return set()
    if isinstance(value, str):
        return {value}
    if isinstance(value, tuple | list) and all(isinstance(v, str) for v in value):
        return set(value)
    raise ValueError(f"down_revision {value!r}")


def head_revision(versions: Path = VERSIONS) -> str | None:
    """The one head of the revision files in ``versions``, or None when unsure."""
    revisions: set[str] = set()
    parents: set[str] = set()
    try:
        for path in sorted(versions.glob("*.py")):
            found = _literals(path)
            revision = found.get("revision")
            if not isinstance(revision, str):
                return None
            revisions.add(revision)
            parents |= _downs(found.get("down_revision"))
    except (OSError, SyntaxError, ValueError):
        return None
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None
