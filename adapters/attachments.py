"""Files that came with a message: saved for the agent, or named when left out.

``save_attachment`` writes a downloaded file off the event loop and names it for the
agent; ``too_big`` and ``not_downloaded`` are the notes for files left out.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from core.messages import Attachment, AttachmentKind


def too_big(name: str) -> str:
    return f"[{name} was not read: larger than the file size limit]"


def not_downloaded(name: str) -> str:
    return f"[{name} could not be downloaded]"


async def save_attachment(
    folder: Path, unique: str, name: str, mime: str, data: bytes, kind: AttachmentKind = "file"
) -> tuple[Attachment, str]:
    """Write ``data`` under ``folder`` (off the event loop: a big file must not stall
    every chat); return the attachment (of ``kind``, as the platform said) and the note
    that names it to the agent."""
    path = folder / re.sub(r"[^A-Za-z0-9._-]", "_", f"{unique}-{name}")[:200]
    await asyncio.to_thread(_write_file, path, data)
    note = f"[attached {name} ({mime}, {len(data):,} bytes): {path}]"
    return Attachment(str(path), mime, name, len(data), kind), note


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
