"""The media store: each file's bytes kept once under ``<home>/media/``, by content hash.

A file is written to ``media/<first two hex digits>/<sha256>`` through a temporary file
and an atomic rename, so a reader never sees half a file and two writers of the same
bytes agree. Stored messages and replies keep only a ``MediaRef``; the bytes a model
request or a platform send reads are the bytes stored, so a replay sends the same.
The store never deletes on its own (a person's data is deleted by its own command).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
from pathlib import Path

from core.media.refs import MediaKind, MediaRef


class MediaStore:
    """See the module docstring. Blocking methods end in ``_sync``; the others run them
    off the event loop."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, ref: MediaRef | str) -> Path:
        digest = ref if isinstance(ref, str) else ref.sha256
        return self.root / digest[:2] / digest

    def put_sync(
        self, data: bytes, mime: str, *, kind: MediaKind = "file", name: str = ""
    ) -> MediaRef:
        """Store ``data`` (once: an existing copy is kept) and return its ref."""
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        return MediaRef(sha256=digest, mime=mime, kind=kind, name=name, size=len(data))

    async def put(
        self, data: bytes, mime: str, *, kind: MediaKind = "file", name: str = ""
    ) -> MediaRef:
        return await asyncio.to_thread(self.put_sync, data, mime, kind=kind, name=name)

    def read_sync(self, ref: MediaRef | str) -> bytes:
        """The stored bytes; ``FileNotFoundError`` when they are gone."""
        return self.path(ref).read_bytes()

    async def read(self, ref: MediaRef | str) -> bytes:
        return await asyncio.to_thread(self.read_sync, ref)

    def has(self, ref: MediaRef | str) -> bool:
        return self.path(ref).is_file()
