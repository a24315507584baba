"""Intake: a message's attachments turned into what its turn stores and sends.

Each attachment goes to the first reader that takes it (``AttachmentReader.takes``):
an image becomes an image part for a vision model, a voice note a transcript, a
document its text. What a reader adds to ``UserInput.text`` is stored as the person's
words; ``media`` is stored with the message and sent with it on every request;
``material`` is turn-only (it reaches the model through the message's API copy, which
is stored for replay, never as what the person wrote). An attachment no reader takes
stays as its adapter named it in the text.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from core.media.refs import MediaRef
from core.messages import Attachment, InboundMessage

log = logging.getLogger(__name__)


@dataclass(slots=True)
class UserInput:
    """A user message as its turn stores it (see the module docstring)."""

    text: str
    media: list[MediaRef] = field(default_factory=list)
    material: list[str] = field(default_factory=list)

    def add_line(self, line: str) -> None:
        """Add a line to the stored text (a transcript, a note about a file)."""
        self.text = f"{self.text}\n{line}" if self.text else line


class AttachmentReader(Protocol):
    """Reads one kind of attachment into a ``UserInput``."""

    def takes(self, attachment: Attachment) -> bool:
        """Whether this reader reads ``attachment`` (by its kind and mime type)."""
        ...

    async def read(self, attachment: Attachment, into: UserInput) -> None:
        """Add what ``attachment`` holds to ``into``; a failure is a line in the text
        saying so plainly, never an exception."""
        ...


def unreadable(attachment: Attachment) -> str:
    """The line for a file no reader could read."""
    return f"[{attachment.name or 'a file'} could not be read]"


class MediaIntake:
    """The readers, in the order they are asked."""

    def __init__(self, readers: Sequence[AttachmentReader] = ()) -> None:
        self._readers = tuple(readers)

    async def read(self, msg: InboundMessage) -> UserInput:
        """``msg`` with each attachment read by the first reader that takes it."""
        into = UserInput(msg.text)
        for attachment in msg.attachments:
            reader = next((r for r in self._readers if r.takes(attachment)), None)
            if reader is None:
                continue
            try:
                await reader.read(attachment, into)
            except Exception:  # a reader's bug costs the file, not the turn
                log.exception("reading an attachment failed (%s)", attachment.mime_type)
                into.add_line(unreadable(attachment))
        return into
