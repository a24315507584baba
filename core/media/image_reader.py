"""The image reader of the intake: a photo or image file shown to a vision model.

The file the adapter saved is read and made fit (``core.media.images``) off the event
loop, stored once in the media store and added to the message's ``media``; the provider
sends it as an image part with the message on every request. The adapter's line naming
the file stays in the text. A file that is not an image, or is refused (too many pixels,
damaged), is one line in the text saying so. With ``model.vision: false`` nothing is
decoded: a line tells the model an image was sent.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from core.media.images import Refused, is_image_mime, prepare_image
from core.media.intake import UserInput
from core.media.refs import MediaRef
from core.media.store import MediaStore
from core.messages import Attachment

log = logging.getLogger(__name__)


class ImageReader:
    """An ``AttachmentReader`` for images (see the module docstring)."""

    def __init__(self, store: MediaStore, *, vision: bool) -> None:
        self._store = store
        self._vision = vision

    def takes(self, attachment: Attachment) -> bool:
        return attachment.kind == "image" or is_image_mime(attachment.mime_type)

    async def read(self, attachment: Attachment, into: UserInput) -> None:
        name = attachment.name or Path(attachment.path).name
        if not self._vision:
            into.add_line(f"[{name} is an image; this model is not shown images]")
            return
        try:
            stored = await asyncio.to_thread(self._stored, Path(attachment.path), name)
        except OSError as exc:
            log.warning("an image could not be read from the cache: %s", exc.strerror)
            stored = Refused("the file is gone")
        if isinstance(stored, Refused):
            into.add_line(f"[{name} could not be shown to the model: {stored.reason}]")
        else:
            into.media.append(stored)

    def _stored(self, path: Path, name: str) -> MediaRef | Refused:
        image = prepare_image(path.read_bytes())
        if isinstance(image, Refused):
            return image
        log.debug("image %s: %dx%d %s", name, image.width, image.height, image.mime)
        return self._store.put_sync(image.data, image.mime, kind="image", name=name)
