"""Real image files for tests and benchmarks, made with Pillow (deterministic)."""

from __future__ import annotations

import io
import random
import struct
import zlib

from PIL import Image


def noise(width: int, height: int, *, seed: int = 1) -> Image.Image:
    """Grey noise, the same for the same seed (Pillow's own noise is not)."""
    return Image.frombytes("L", (width, height), random.Random(seed).randbytes(width * height))


def photo(width: int, height: int, *, seed: int = 1) -> Image.Image:
    """A photo-like picture: gradients with some fine detail, so JPEG has work to do."""
    gradient = Image.linear_gradient("L").resize((width, height))
    grain = noise(width, height, seed=seed)
    red = Image.blend(gradient, grain, 0.3)
    green = gradient.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    blue = Image.blend(gradient, grain, 0.1).transpose(Image.Transpose.FLIP_TOP_BOTTOM)
    return Image.merge("RGB", (red, green, blue))


def encoded(image: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def jpeg(width: int = 320, height: int = 240, *, seed: int = 1, quality: int = 85) -> bytes:
    """A real JPEG of ``width`` × ``height``."""
    return encoded(photo(width, height, seed=seed), "JPEG", quality=quality)


def png(width: int = 320, height: int = 240, *, alpha: bool = False) -> bytes:
    image = photo(width, height)
    if alpha:
        image.putalpha(128)
    return encoded(image, "PNG", compress_level=1)


def size_of(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size


def format_of(data: bytes) -> str | None:
    with Image.open(io.BytesIO(data)) as image:
        return image.format


def png_claiming(width: int, height: int) -> bytes:
    """A tiny, valid-looking PNG whose header claims ``width`` × ``height`` pixels: a
    decompression bomb as a decoder first sees it."""
    real = png(8, 8)
    header = struct.pack(">II", width, height) + real[24:29]  # depth, colour, ...
    chunk = b"IHDR" + header
    ihdr = struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk))
    return real[:8] + ihdr + real[33:]
