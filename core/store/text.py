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
    # A plain loop: this runs for every row written, on the writer's thread.
    for value in row.values():
        if isinstance(value, str) and NUL in value:
            break
    else:
        return row
    return {k: v.replace(NUL, REPLACEMENT) if isinstance(v, str) else v for k, v in row.items()}
