"""The images a model request carries: the base64 of stored images, read once.

A request sends every image of its history with the user message it came with, every
turn (the bytes stored with the message: a replay, or the next turn, sends the same, so
the provider's prompt cache keeps matching). ``ImageData`` keeps the base64 of recently
sent images in a small cache bounded by size, so a long history is not read from disk
and encoded again each turn. An image gone from the store (or a history image when
``model.vision`` is off) is sent as a line of text in its place, never an error.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path

from core.media.refs import MediaRef
from core.media.store import MediaStore
from core.models.base import ChatMessage
from core.record import record

log = logging.getLogger(__name__)

# Base64 characters kept at most (a few dozen photos at the usual few hundred KB).
CACHE_CHARS = 32 * 1024 * 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")


@record
class LoadedImages:
    """The images of one request: base64 by SHA-256, and how a missing one is named."""

    data: Mapping[str, str]
    vision: bool = True

    def base64(self, ref: MediaRef) -> str | None:
        return self.data.get(ref.sha256)

    def placeholder(self, ref: MediaRef) -> str:
        """The line sent where ``ref`` cannot be."""
        name = ref.name or "an image"
        if not self.vision:
            return f"[{name} is an image; this model is not shown images]"
        return f"[{name}: an image that is no longer stored]"


NO_IMAGES = LoadedImages({})


class ImageData:
    """Reads and encodes the images requests carry (see the module docstring)."""

    def __init__(
        self, media_dir: Path | None, *, vision: bool = True, budget: int = CACHE_CHARS
    ) -> None:
        self._store = MediaStore(media_dir) if media_dir is not None else None
        self._vision = vision
        self._budget = budget
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._size = 0

    async def load(self, messages: Sequence[ChatMessage]) -> LoadedImages:
        """The base64 of every image ``messages`` carry that the store holds."""
        if not self._vision or self._store is None:
            return LoadedImages({}, self._vision)
        refs = {ref.sha256: ref for message in messages if message.images for ref in message.images}
        if not refs:
            return LoadedImages({}, self._vision)
        found: dict[str, str] = {}
        for digest in refs:
            if digest in self._cache:
                self._cache.move_to_end(digest)
                found[digest] = self._cache[digest]
        unread = [ref for digest, ref in refs.items() if digest not in found]
        if unread:
            read = await asyncio.to_thread(self._read, self._store, unread)
            found.update(read)
            for digest, encoded in read.items():
                self._keep(digest, encoded)
        return LoadedImages(found, self._vision)

    @staticmethod
    def _read(store: MediaStore, refs: Sequence[MediaRef]) -> dict[str, str]:
        read: dict[str, str] = {}
        for ref in refs:
            if not _SHA256.fullmatch(ref.sha256):
                continue  # not a name the store gave: never a path to follow
            try:
                read[ref.sha256] = base64.b64encode(store.read_sync(ref)).decode("ascii")
            except OSError as exc:
                log.warning("an image of the history is not in the media store: %s", exc.strerror)
        return read

    def _keep(self, digest: str, encoded: str) -> None:
        if len(encoded) > self._budget:
            return
        self._cache[digest] = encoded
        self._size += len(encoded)
        while self._size > self._budget:
            _, dropped = self._cache.popitem(last=False)
            self._size -= len(dropped)
