"""The readers of a message's attachments, built from the settings (``core.media.intake``).

Each reader is one kind of file; the order is the order they are asked.
"""

from __future__ import annotations

from core.media.image_reader import ImageReader
from core.media.intake import AttachmentReader, MediaIntake
from core.media.store import MediaStore
from gateway.features.documents import document_reader
from gateway.features.stt import voice_reader
from gateway.settings import Settings


def build_intake(settings: Settings) -> MediaIntake:
    """The intake for these settings."""
    media = MediaStore(settings.media_dir)
    readers: list[AttachmentReader] = [
        ImageReader(media, vision=settings.model.vision),
        voice_reader(settings),
        document_reader(settings),  # last: it takes every file the others leave
    ]
    return MediaIntake(readers)
