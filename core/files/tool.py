"""The ``send_file`` tool: send a file from the home's ``outbox/`` folder to the chat.

The file is copied into the media store (so the reply keeps its bytes even if the
folder changes before delivery, after a restart too) and attached to the call's result;
the turn's last reply carries it (``core.turns``), after its text. A file another tool
produced is sent the same way: that tool writes it under ``outbox/`` first.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import mimetypes
from typing import Any

from core.errors import ToolArgumentError
from core.files.folder import OutboxFolder
from core.media.store import MediaStore
from core.models.base import ToolSpec
from core.tools import ToolContext, tool_error

MAX_CAPTION_CHARS = 1024  # the smallest caption limit of the chat platforms
DEFAULT_MIME = "application/octet-stream"

SEND_FILE_SPEC = ToolSpec(
    name="send_file",
    description=(
        "Send a file to the person in this chat. It goes out with your reply, after its "
        "text: an image (JPEG, PNG, WebP) as a photo where the chat shows photos, any other "
        "file as a document to download. The file must be in the outbox folder: write it "
        "there first (or have the tool that makes it save it there). Call once per file. "
        "Returns {success, name, mime, size}, or {success: false, error} saying why the "
        "file cannot be sent (not found, outside the folder, a directory, too large)."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": (
                    "The file, relative to the outbox folder (e.g. 'report.pdf' or "
                    "'charts/q3.png'); an absolute path must be inside that folder. "
                    "The person sees the file's own name."
                ),
            },
            "caption": {
                "type": "string",
                "maxLength": MAX_CAPTION_CHARS,
                "description": "A short line shown with the file (optional).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
)


class SendFileTool:
    """``send_file``; see the module docstring."""

    spec = SEND_FILE_SPEC

    def __init__(self, folder: OutboxFolder, media: MediaStore) -> None:
        self._folder = folder
        self._media = media

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        path, caption = args.get("path"), args.get("caption") or ""
        if not isinstance(path, str):
            return tool_error("'path' is required: the file's path in the outbox folder")
        if not isinstance(caption, str) or len(caption) > MAX_CAPTION_CHARS:
            return tool_error(f"'caption' must be text of at most {MAX_CAPTION_CHARS} characters")
        if ctx.attach is None:
            return tool_error("send_file only works in a conversation turn")
        try:
            found = await asyncio.to_thread(self._folder.read, path)
        except ToolArgumentError as exc:
            return tool_error(str(exc))
        except OSError as exc:
            return tool_error(f"{path!r} cannot be read: {exc.strerror or exc}")
        mime = mimetypes.guess_type(found.name, strict=False)[0] or DEFAULT_MIME
        ref = await self._media.put(found.data, mime, kind="file", name=found.name)
        ctx.attach(dataclasses.replace(ref, caption=caption.strip()))
        return json.dumps({"success": True, "name": ref.name, "mime": ref.mime, "size": ref.size})
