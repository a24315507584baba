"""What deciding an approval came to, as the core tells an adapter (the webhook)."""

from __future__ import annotations

from typing import Literal

from core.record import record
from core.store.records import Approval


@record
class Decided:
    """``decided`` (``approval`` as now stored), ``unknown`` (no such id where it was
    asked), ``already`` (decided before: ``approval`` says how) or ``forbidden`` (the
    person may not decide approvals)."""

    kind: Literal["decided", "unknown", "already", "forbidden"]
    approval: Approval | None = None
