"""The document reader of the intake: a file's text shown to the model for that turn.

Text-like files (plain text, Markdown, CSV, JSON, YAML, source code: by mime type or
extension, UTF-8, refused when the first bytes hold a NUL) and PDFs (``core.media.pdf``,
off the event loop) are read up to ``max_chars`` characters per message, every
document of the message counted together. The text is turn-only material
(``UserInput.material``): it reaches the model in the message's API copy, fenced as
``<document name="..." type="...">``, and the stored text keeps the adapter's line
naming the file, never the file's contents. A document cut at the cap says so inside
its fence. Any other file, and a file that cannot be read (a password-protected,
damaged or scanned PDF, text that is not UTF-8), is one line in the text: its name,
type and size, and why it was not read.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import re
from pathlib import Path

from core.media.intake import UserInput
from core.media.notes import described, shown_name, swap_note
from core.media.pdf import Extracted, pdf_text
from core.messages import Attachment

log = logging.getLogger(__name__)

FENCE = "document"
# Anything that could open or close the fence from inside a document.
_FENCE_TAG = re.compile(r"<(\s*/?\s*document)", re.IGNORECASE)
# UTF-8 takes at most 4 bytes a character: this many bytes always hold the limit.
_BYTES_PER_CHAR = 4
# A NUL in the first bytes means a binary file (text never holds one).
_SNIFF_BYTES = 8192
# Text that is not quite UTF-8 (one stray Latin-1 byte in a CSV) is still read, with
# replacement marks; past this share of marks it is not text.
_MAX_REPLACED = 0.01

TEXT_MIMES = frozenset(
    {
        "application/json",
        "application/x-ndjson",
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/javascript",
        "application/x-javascript",
        "application/typescript",
        "application/x-sh",
        "application/x-shellscript",
        "application/sql",
        "application/x-python",
        "application/x-tex",
        "application/csv",
    }
)
# Extensions of text files whatever type they are sent as (often octet-stream).
_TEXT_NAMES = (
    "txt text md markdown rst org csv tsv json jsonl ndjson yaml yml toml ini cfg conf env "
    "log xml html htm css scss svg tex srt vtt py pyi js mjs cjs ts tsx jsx java kt kts "
    "scala c h cc cpp hpp cs go rs rb php pl lua r swift m sh bash zsh fish ps1 bat sql "
    "graphql proto dockerfile makefile gradle diff patch"
)
TEXT_EXTENSIONS = frozenset(f".{name}" for name in _TEXT_NAMES.split())


def _mime(attachment: Attachment) -> str:
    return attachment.mime_type.split(";", 1)[0].strip().lower()


def _extension(attachment: Attachment) -> str:
    return Path(shown_name(attachment)).suffix.lower()


def is_pdf(attachment: Attachment) -> bool:
    return _mime(attachment) == "application/pdf" or _extension(attachment) == ".pdf"


def is_text_like(attachment: Attachment) -> bool:
    """A file whose type or name says it is text (the bytes are checked when read)."""
    mime = _mime(attachment)
    if mime.startswith("text/") or mime in TEXT_MIMES or mime.endswith(("+json", "+xml")):
        return True
    return _extension(attachment) in TEXT_EXTENSIONS


class DocumentReader:
    """An ``AttachmentReader`` for documents and other files (module docstring)."""

    def __init__(self, *, max_chars: int = 20_000, enabled: bool = True) -> None:
        self._max_chars = max_chars
        self._enabled = enabled

    def takes(self, attachment: Attachment) -> bool:
        # Images, voice notes and audio have readers of their own, asked before this one.
        mime = _mime(attachment)
        if not self._enabled or attachment.kind in ("image", "voice", "audio"):
            return False
        return not mime.startswith(("image/", "audio/"))

    async def read(self, attachment: Attachment, into: UserInput) -> None:
        if not (is_pdf(attachment) or is_text_like(attachment)):
            note = f"[attached {described(attachment)}: not a text file or PDF, so not read"
            swap_note(into, attachment, f"{note}; saved at {attachment.path}]")
            return
        room = self._max_chars - sum(len(m) for m in into.material if m.startswith(f"<{FENCE} "))
        name = shown_name(attachment)
        if room <= 0:
            swap_note(into, attachment, f"[{name} was not read: {_FULL}]")
            return
        try:
            read = await asyncio.to_thread(_read, Path(attachment.path), is_pdf(attachment), room)
        except OSError as exc:
            log.warning("a document could not be read from the cache: %s", exc.strerror)
            swap_note(into, attachment, f"[{name} could not be read: the file is gone]")
            return
        if read.problem:
            swap_note(into, attachment, f"[{name} could not be read: {read.problem}]")
            return
        into.material.append(fenced(attachment, read, self._max_chars))


_FULL = "the message's other documents already fill documents.max_chars"


def _read(path: Path, pdf: bool, limit: int) -> Extracted:
    """The file's text, at most ``limit`` characters (blocking)."""
    if pdf:
        return pdf_text(path.read_bytes(), limit)
    with path.open("rb") as file:
        data = file.read(limit * _BYTES_PER_CHAR + 1)
        more = len(data) > limit * _BYTES_PER_CHAR
    return decoded(data[: limit * _BYTES_PER_CHAR], limit, more=more)


def decoded(data: bytes, limit: int, *, more: bool = False) -> Extracted:
    """``data`` as text (UTF-8, a BOM dropped), at most ``limit`` characters; ``more``:
    the file goes on past ``data`` (a character split at its end is dropped)."""
    if b"\x00" in data[:_SNIFF_BYTES]:
        return Extracted(problem="it is not a text file")
    try:
        text = codecs.getincrementaldecoder("utf-8-sig")().decode(data, final=not more)
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        if text.count("\ufffd") > max(1, len(text) * _MAX_REPLACED):
            return Extracted(problem="it is not UTF-8 text")
    if not text.strip():
        return Extracted(problem="it is empty")
    return Extracted(text[:limit], cut=more or len(text) > limit)


def fenced(attachment: Attachment, read: Extracted, max_chars: int) -> str:
    """The document's text in a fence naming the file, which the text cannot close."""
    name = re.sub(r'["<>\n]', "_", shown_name(attachment))
    body = _FENCE_TAG.sub(r"&lt;\1", read.text)
    lines = [f'<{FENCE} name="{name}" type="{_mime(attachment)}">', body]
    if read.cut:
        lines.append(_cut_line(read, max_chars))
    lines.append(f"</{FENCE}>")
    return "\n".join(lines)


def _cut_line(read: Extracted, max_chars: int) -> str:
    where = f" (pages 1-{read.pages_read} of {read.pages})" if read.pages else ""
    return (
        f"[cut here{where}: the rest was not read; documents.max_chars is {max_chars:,} "
        "characters a message]"
    )
