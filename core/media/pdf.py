"""The text of a PDF, with pypdf, up to a number of characters.

``pdf_text`` is blocking (run it off the event loop) and never raises for a bad file:
a password-protected, damaged or image-only PDF comes back as ``Extracted`` with
``problem`` set to a few words a person understands. Pages are read only until the
limit is reached, so a 500-page file costs what its first pages cost.
"""

from __future__ import annotations

import io
import logging
from typing import TYPE_CHECKING

from core.record import record

if TYPE_CHECKING:  # pypdf (and Pillow, which it imports) load with the first PDF
    from pypdf import PdfReader

log = logging.getLogger(__name__)

ENCRYPTED = "it is password-protected"
DAMAGED = "the file is damaged or not a PDF"
NO_TEXT = "it has no text to read (its pages are images: a scan?)"


@record
class Extracted:
    """What was read: ``text`` (at most the limit), and when it stopped early, how far
    it got (``pages_read`` of ``pages``). ``problem`` is set when nothing could be."""

    text: str = ""
    pages_read: int = 0
    pages: int = 0
    cut: bool = False
    problem: str = ""


def pdf_text(data: bytes, limit: int) -> Extracted:
    """The text of the PDF ``data``, at most ``limit`` characters (blocking)."""
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not _opened(reader):
            return Extracted(problem=ENCRYPTED)
        return _pages(reader, limit)
    except (FileNotDecryptedError, DependencyError):
        return Extracted(problem=ENCRYPTED)
    except PyPdfError as exc:
        log.info("a PDF could not be read: %s", type(exc).__name__)
        return Extracted(problem=DAMAGED)
    except Exception as exc:  # noqa: BLE001 - pypdf meets a broken file with many types
        log.info("a PDF could not be read: %s", type(exc).__name__)
        return Extracted(problem=DAMAGED)


def _opened(reader: PdfReader) -> bool:
    """Many PDFs are encrypted with an empty password only to restrict printing."""
    from pypdf.errors import DependencyError, PyPdfError

    try:
        return bool(reader.decrypt(""))
    except (PyPdfError, DependencyError, NotImplementedError):
        return False


def _pages(reader: PdfReader, limit: int) -> Extracted:
    total = len(reader.pages)
    pieces: list[str] = []
    size = 0
    for number, page in enumerate(reader.pages, start=1):
        text = (page.extract_text() or "").strip()
        if not text:
            continue
        pieces.append(text)
        size += len(text) + 2
        if size >= limit:
            joined = "\n\n".join(pieces)
            cut = len(joined) > limit or number < total
            return Extracted(joined[:limit], number, total, cut=cut)
    if not pieces:
        return Extracted(pages=total, problem=NO_TEXT)
    return Extracted("\n\n".join(pieces), total, total)
