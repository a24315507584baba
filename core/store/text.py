"""Text the SessionDB can hold on every backend.

PostgreSQL text cannot contain NUL characters; SQLite can. A NUL from a platform or
a model must not turn into a failed write (and an inbox row retried forever), so
every row is scrubbed the same way on both backends before it is written.
"""

from __future__ import annotations

from typing import Any

NUL = "\x00"
REPLACEMENT = "\ufffd"


def scrub_row(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with NUL replaced in every string value (a copy only when needed)."""
    if not any(isinstance(v, str) and NUL in v for v in row.values()):
        return row
    return {k: v.replace(NUL, REPLACEMENT) if isinstance(v, str) else v for k, v in row.items()}
