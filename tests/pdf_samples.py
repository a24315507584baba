"""Small real PDFs written by hand for the document tests (no PDF library involved)."""

from __future__ import annotations

import io

from pypdf import PdfWriter


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content(text: str) -> bytes:
    """A page's drawing: each line of ``text`` in Helvetica, or a grey box for none."""
    if not text:
        return b"0.5 g 72 72 200 200 re f"  # a picture, no text: what a scan looks like
    lines = [f"({_escaped(line)}) Tj T*" for line in text.split("\n")]
    return f"BT /F1 12 Tf 14 TL 72 720 Td {' '.join(lines)} ET".encode("latin-1")


def text_pdf(*pages: str) -> bytes:
    """A valid PDF whose pages show ``pages`` (an empty string: a page with no text)."""
    count = len(pages)
    kids = " ".join(f"{4 + 2 * n} 0 R" for n in range(count))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for n, text in enumerate(pages):
        stream = _content(text)
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * n} 0 R >>".encode()
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\n".encode()
    out += f"startxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def encrypted_pdf(text: str, password: str = "secret") -> bytes:
    """``text_pdf(text)`` locked with a user password (RC4: no crypto library needed)."""
    writer = PdfWriter(clone_from=io.BytesIO(text_pdf(text)))
    writer.encrypt(user_password=password, owner_password=password, algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
