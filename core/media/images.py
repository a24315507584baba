"""Images made fit for vision models: decoded safely, turned upright, downscaled and
encoded in a format every provider takes.

One set of limits suits both OpenAI-compatible servers and Anthropic:

- the long edge at most ``MAX_EDGE`` (1568) pixels: Anthropic scales anything larger
  down itself before the model sees it, and OpenAI's high detail tiles it down too, so
  more pixels cost upload time and nothing else;
- at most ``MAX_BYTES`` (3.75 MB) encoded: its base64 is 5 MB, Anthropic's cap per image;
- JPEG or PNG out (PNG only for images with transparency), or a GIF or WebP already fit,
  unanimated: the formats both take. BMP, TIFF and animations (their first frame) are
  converted.

An image already fit (one of those formats, within the limits, unanimated, a plain
colour mode, no EXIF block) is kept byte for byte. Anything else is re-encoded with
fixed settings and without metadata (EXIF, which may hold where a photo was taken, is
never sent), so the same file always gives the same bytes and is stored once.

Safety: only formats Pillow decodes in-process are opened (``OPEN_FORMATS``: no EPS,
which would run Ghostscript); an image whose header claims more than ``MAX_PIXELS``
pixels is refused before it is decoded (a decompression bomb: a small file that would
take gigabytes once decoded; Pillow's own ``MAX_IMAGE_PIXELS`` check stays as a second
guard). What cannot be shown is a ``Refused`` with a reason for a person.
"""

from __future__ import annotations

import io
import struct
from typing import TYPE_CHECKING

from core.record import record

if TYPE_CHECKING:  # Pillow is imported by the first image, not by every start
    from PIL import Image

MAX_EDGE = 1568
MAX_BYTES = 3_750_000
MAX_PIXELS = 50_000_000
OPEN_FORMATS = ("JPEG", "PNG", "GIF", "WEBP", "BMP", "TIFF")
# Formats both providers take, and the mime type each is sent as.
SENT_FORMATS = {"JPEG": "image/jpeg", "PNG": "image/png", "GIF": "image/gif", "WEBP": "image/webp"}
# Colour modes every provider decodes as they are (not CMYK, 16-bit or float).
PLAIN_MODES = frozenset({"L", "RGB", "RGBA", "LA", "P"})
# Tried in turn until the JPEG fits MAX_BYTES; then the image is made smaller.
JPEG_QUALITIES = (85, 75, 65)
SHRINK_STEPS = 6
# What a broken file makes Pillow's decoders raise (SyntaxError and struct.error come
# from some plugins' header parsers).
DECODE_ERRORS = (OSError, ValueError, SyntaxError, EOFError, struct.error, IndexError)


@record
class PreparedImage:
    """An image as a model is sent it."""

    data: bytes
    mime: str
    width: int
    height: int


@record
class Refused:
    """Why an image cannot be shown to the model, in words for the person who sent it."""

    reason: str


def is_image_mime(mime: str) -> bool:
    """A raster image type: one a vision model could be shown (SVG is markup, not
    pixels)."""
    kind = mime.split(";", 1)[0].strip().lower()
    return kind.startswith("image/") and not kind.startswith("image/svg")


def prepare_image(data: bytes) -> PreparedImage | Refused:
    """``data`` made fit for a vision model (see the module docstring), or why it cannot
    be; blocking, so run it off the event loop."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data), formats=OPEN_FORMATS) as image:
            width, height = image.size
            if width * height > MAX_PIXELS:
                return Refused(_too_many_pixels(f" ({width}×{height} pixels)"))
            if _fits(image, len(data)):
                assert image.format is not None  # _fits checked it
                return PreparedImage(data, SENT_FORMATS[image.format], width, height)
            return _reencoded(image)
    except UnidentifiedImageError:
        return Refused("it is not an image in a format this gateway reads")
    except Image.DecompressionBombError:
        return Refused(_too_many_pixels(""))
    except DECODE_ERRORS as exc:
        return Refused(f"the image is damaged ({exc})")


def _too_many_pixels(size: str) -> str:
    return f"it is too large to decode{size}; the limit is {MAX_PIXELS // 1_000_000} megapixels"


def _fits(image: Image.Image, size: int) -> bool:
    return (
        image.format in SENT_FORMATS
        and not getattr(image, "is_animated", False)
        and image.mode in PLAIN_MODES
        and max(image.size) <= MAX_EDGE
        and size <= MAX_BYTES
        and not image.getexif()
    )


def _reencoded(image: Image.Image) -> PreparedImage | Refused:
    # Scaled before it is turned upright: a JPEG is then decoded at a reduced size
    # (``thumbnail`` asks the decoder for one), and the long edge is the same either way.
    from PIL import Image, ImageOps

    image.thumbnail((MAX_EDGE, MAX_EDGE), Image.Resampling.LANCZOS)
    upright = ImageOps.exif_transpose(image)
    flat, fmt = _flattened(upright)
    for _ in range(SHRINK_STEPS):
        for quality in JPEG_QUALITIES if fmt == "JPEG" else (0,):
            data = _encode(flat, fmt, quality)
            if len(data) <= MAX_BYTES:
                return PreparedImage(data, SENT_FORMATS[fmt], *flat.size)
        width, height = flat.size
        flat = flat.resize(
            (max(1, width * 3 // 4), max(1, height * 3 // 4)), Image.Resampling.LANCZOS
        )
    return Refused(f"it does not fit in {MAX_BYTES:,} bytes even made smaller")


def _flattened(image: Image.Image) -> tuple[Image.Image, str]:
    """The image in the mode its output format takes: RGBA for PNG when it has
    transparency, RGB for JPEG otherwise."""
    transparent = image.mode in ("RGBA", "LA", "PA") or (
        image.mode == "P" and "transparency" in image.info
    )
    if transparent:
        return (image if image.mode == "RGBA" else image.convert("RGBA")), "PNG"
    return (image if image.mode == "RGB" else image.convert("RGB")), "JPEG"


def _encode(image: Image.Image, fmt: str, quality: int) -> bytes:
    out = io.BytesIO()
    if fmt == "JPEG":
        # Fixed settings, no metadata: the same pixels always give the same bytes.
        image.save(out, "JPEG", quality=quality, optimize=True, subsampling=2, progressive=False)
    else:
        image.save(out, "PNG", compress_level=6, optimize=False)
    return out.getvalue()
