"""The line that stands for an attachment in the person's stored text.

An adapter names each file it saved in the message's text (``[attached name (type,
size): path]``), so a turn with no reader for it still knows it came. A reader that
turns the file into words (a voice note's transcript) or says why it could not puts
its own line in that one's place, so the stored message reads as the person meant it
(``[voice note] see you at six``), not as a file listing followed by a transcript.
"""

from __future__ import annotations

from pathlib import Path

from core.media.intake import UserInput
from core.messages import Attachment


def shown_name(attachment: Attachment) -> str:
    """The file's name as the person sent it (else the saved file's)."""
    return attachment.name or Path(attachment.path).name or "a file"


def described(attachment: Attachment) -> str:
    """``name (type, N bytes)``: what a note about a file not read says of it."""
    return f"{shown_name(attachment)} ({attachment.mime_type}, {attachment.size:,} bytes)"


def swap_note(into: UserInput, attachment: Attachment, line: str) -> None:
    """Put ``line`` where the adapter's line naming ``attachment`` (by its saved path)
    stands in ``into.text``; add it at the end when there is none."""
    lines = into.text.split("\n")
    for index, text in enumerate(lines):
        if text.startswith("[") and attachment.path and attachment.path in text:
            lines[index] = line
            into.text = "\n".join(lines)
            return
    into.add_line(line)
