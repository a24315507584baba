"""``MediaRef``: a file in the home's content-addressed media store, as messages and
replies refer to it."""

from __future__ import annotations

import json
from typing import Any, Literal

from core.record import record

# image: shown to a vision model with its message; file: sent to the chat as a
# document (or a photo, for an image mime type); voice: sent as a voice message.
MediaKind = Literal["image", "file", "voice"]
KINDS: tuple[MediaKind, ...] = ("image", "file", "voice")


@record
class MediaRef:
    """One stored file: its SHA-256 (hex), mime type and kind, and the name and size it
    is shown with (and, for a file sent to a chat, the line shown with it). The bytes
    live at ``MediaStore.path(ref)``."""

    sha256: str
    mime: str
    kind: MediaKind = "file"
    name: str = ""
    size: int = 0
    caption: str = ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "sha256": self.sha256,
            "mime": self.mime,
            "kind": self.kind,
            "name": self.name,
            "size": self.size,
        }
        if self.caption:
            data["caption"] = self.caption
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MediaRef:
        kind = data.get("kind", "file")
        return cls(
            sha256=str(data["sha256"]),
            mime=str(data.get("mime", "application/octet-stream")),
            kind=kind if kind in KINDS else "file",
            name=str(data.get("name", "")),
            size=int(data.get("size", 0)),
            caption=str(data.get("caption") or ""),
        )


def refs_to_json(refs: tuple[MediaRef, ...] | list[MediaRef]) -> list[dict[str, Any]] | None:
    """``refs`` as the JSON a ``media`` column holds (None for none)."""
    return [ref.to_json() for ref in refs] if refs else None


def refs_from_json(stored: Any) -> tuple[MediaRef, ...]:
    """A ``media`` column's JSON (text, a list, or NULL) as refs."""
    data = json.loads(stored) if isinstance(stored, str) else stored
    return tuple(MediaRef.from_json(item) for item in data or ())
