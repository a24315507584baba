"""``--json`` on the listing commands: one JSON document on stdout, for scripts.

Times are ISO 8601 in UTC (``2026-01-02T03:04:05Z``), absent ones ``null``; the keys
are the column names of the table the command prints otherwise, in snake case.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

JsonFlag = Annotated[bool, typer.Option("--json", help="print JSON instead of a table")]


def emit(document: Any) -> None:
    """Write ``document`` as indented JSON and a newline (never wrapped or coloured)."""
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def iso(at: float | None) -> str | None:
    """``at`` (seconds since the epoch) as ISO 8601 UTC, or None."""
    if at is None:
        return None
    return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
