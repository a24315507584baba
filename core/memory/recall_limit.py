"""The ceiling on one turn's provider recall: cut with a marker, or spilled to a file.

A provider may return far more than a turn can carry (a runaway backend, a huge
document). Recall longer than ``max_chars`` is either cut to fit, with a marker saying
how much was left out, or, with spilling on, saved whole to a file under
``$CHATGATE_HOME/spill/recall/`` and replaced by its head, its tail and the file's path.
Spill files are readable by their owner only; older ones are pruned at each spill.
"""

from __future__ import annotations

import logging
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path

from core.record import record

log = logging.getLogger(__name__)

SPILL_DIR = Path("spill") / "recall"
PREVIEW_CHARS = 2_000
KEEP_SPILLS = 50
SPILL_MAX_AGE_SECONDS = 7 * 24 * 3600


@record
class RecallCeiling:
    """``max_chars`` per turn; ``spill_to`` (a folder) when oversized recall is spilled."""

    max_chars: int = 100_000
    spill_to: Path | None = None

    def over(self, recall: str) -> bool:
        return len(recall) > self.max_chars

    def bound(self, recall: str, *, session_id: str, now: float) -> str:
        """``recall`` as it may enter the turn. Spilling writes a file: call it off the
        event loop when ``over(recall)``."""
        if not self.over(recall):
            return recall
        if self.spill_to is not None:
            try:
                path = spill(self.spill_to, recall, session_id=session_id, now=now)
            except OSError as exc:
                log.warning("cannot spill recall to %s: %s; cutting it", self.spill_to, exc)
            else:
                return spilled_text(recall, path)
        return cut_text(recall, self.max_chars)


def cut_text(recall: str, max_chars: int) -> str:
    """The first part of ``recall`` that fits in ``max_chars`` with the marker."""
    total = len(recall)
    marker = (
        f"\n\n[Recall cut: {total - max_chars:,} of {total:,} characters left out, "
        f"over the {max_chars:,}-character limit (memory.prefetch_max_chars).]"
    )
    return recall[: max(max_chars - len(marker), 0)].rstrip() + marker


def spilled_text(recall: str, path: Path) -> str:
    """A head/tail preview of ``recall`` and where the whole of it is."""
    total, shown = len(recall), 2 * PREVIEW_CHARS
    return (
        f"[Recall of {total:,} characters was too long for this turn; it is saved in full "
        f"at {path}. The first and last {PREVIEW_CHARS:,} characters follow.]\n\n"
        f"{recall[:PREVIEW_CHARS]}\n\n"
        f"[... {total - shown:,} characters not shown, see {path} ...]\n\n"
        f"{recall[-PREVIEW_CHARS:]}"
    )


def spill(folder: Path, recall: str, *, session_id: str, now: float) -> Path:
    """Write ``recall`` to a new owner-only file in ``folder``; prune old spills."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = datetime.fromtimestamp(now, tz=UTC).strftime("%Y%m%dT%H%M%SZ")
    safe_session = "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)[:64]
    path = folder / f"{stamp}-{safe_session}-{secrets.token_hex(3)}.txt"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(recall)
    prune(folder, now=now, keep=path)
    return path


def prune(folder: Path, *, now: float, keep: Path) -> None:
    """Remove spills older than a week, and all but the newest ``KEEP_SPILLS``."""
    spills = sorted(folder.glob("*.txt"), key=lambda p: p.name, reverse=True)
    for rank, path in enumerate(spills):
        if path == keep:
            continue
        try:
            too_old = now - path.stat().st_mtime > SPILL_MAX_AGE_SECONDS
            if rank >= KEEP_SPILLS or too_old:
                path.unlink()
        except FileNotFoundError:
            continue
