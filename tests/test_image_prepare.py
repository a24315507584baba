"""What a vision model is sent for an image: upright, within the limits, in a format every
provider takes, without metadata, the same bytes every time; bombs and junk refused."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from core.media.images import (
    MAX_BYTES,
    MAX_EDGE,
    PreparedImage,
    Refused,
    is_image_mime,
    prepare_image,
)
from tests.image_files import (
    encoded,
    format_of,
    jpeg,
    noise,
    photo,
    png,
    png_claiming,
    size_of,
)

ORIENTATION = 0x0112
GPS = 0x8825


def test_an_image_already_fit_is_kept_byte_for_byte() -> None:
    data = jpeg(640, 480)

    prepared = shown(data)

    assert prepared.data == data
    assert (prepared.mime, prepared.width, prepared.height) == ("image/jpeg", 640, 480)


def test_a_large_photo_is_downscaled_to_the_long_edge_and_stays_jpeg() -> None:
    prepared = shown(jpeg(3000, 2000))

    assert size_of(prepared.data) == (MAX_EDGE, 1045)
    assert (prepared.width, prepared.height) == (MAX_EDGE, 1045)
    assert format_of(prepared.data) == "JPEG"
    assert prepared.mime == "image/jpeg"


def test_the_same_file_always_gives_the_same_bytes() -> None:
    data = jpeg(2400, 1800, seed=3)

    assert shown(data).data == shown(data).data


def test_exif_orientation_is_applied_and_the_exif_is_not_sent() -> None:
    exif = Image.Exif()
    exif[ORIENTATION] = 6  # stored sideways: shown rotated a quarter turn
    exif[GPS] = {2: (48.0, 51.0, 30.0)}  # where it was taken
    data = encoded(photo(400, 200), "JPEG", exif=exif)

    prepared = shown(data)

    assert size_of(prepared.data) == (200, 400)
    with Image.open(io.BytesIO(prepared.data)) as image:
        assert not image.getexif()


def test_transparency_keeps_png_and_an_opaque_bitmap_becomes_jpeg() -> None:
    clear = shown(png(1600, 800, alpha=True))
    bitmap = shown(encoded(photo(300, 200), "BMP"))
    tiff = shown(encoded(photo(300, 200), "TIFF"))

    assert (clear.mime, format_of(clear.data), size_of(clear.data)) == (
        "image/png",
        "PNG",
        (MAX_EDGE, 784),
    )
    with Image.open(io.BytesIO(clear.data)) as image:
        assert image.mode == "RGBA"
    assert (bitmap.mime, format_of(bitmap.data)) == ("image/jpeg", "JPEG")
    assert (tiff.mime, format_of(tiff.data)) == ("image/jpeg", "JPEG")


def test_an_animation_is_sent_as_its_first_frame() -> None:
    frames = [Image.new("RGB", (64, 48), colour) for colour in ("red", "blue")]
    out = io.BytesIO()
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:], duration=100)

    prepared = shown(out.getvalue())

    assert prepared.mime == "image/jpeg"
    with Image.open(io.BytesIO(prepared.data)) as image:
        red, green, blue = image.convert("RGB").getpixel((10, 10))  # type: ignore[misc]
    assert red > 200 and blue < 60  # noqa: PT018 - one colour


def test_a_detailed_image_is_made_to_fit_the_byte_limit() -> None:
    # Noise in four channels: PNG (for the transparency) cannot squeeze it.
    side = 1100
    grain = Image.merge("RGBA", [noise(side, side, seed=n) for n in range(4)])
    data = encoded(grain, "PNG", compress_level=1)
    assert len(data) > MAX_BYTES

    prepared = shown(data)

    assert len(prepared.data) <= MAX_BYTES
    assert prepared.mime == "image/png"
    assert max(size_of(prepared.data)) < side


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"this is text, not a picture", "not an image"),
        (png(64, 64)[:80], "damaged"),
        (png_claiming(8000, 7000), "8000×7000 pixels"),
        (png_claiming(100_000, 100_000), "too large to decode"),
        (b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n", "not an image"),
    ],
    ids=["text", "truncated", "bomb", "huge-bomb", "eps"],
)
def test_what_cannot_be_shown_is_refused_with_a_reason(data: bytes, reason: str) -> None:
    refused = prepare_image(data)

    assert isinstance(refused, Refused)
    assert reason in refused.reason


@pytest.mark.parametrize(
    ("mime", "image"),
    [
        ("image/jpeg", True),
        ("IMAGE/PNG; charset=binary", True),
        ("image/bmp", True),
        ("image/svg+xml", False),
        ("application/pdf", False),
    ],
)
def test_which_mime_types_are_images(mime: str, image: bool) -> None:
    assert is_image_mime(mime) is image


def shown(data: bytes) -> PreparedImage:
    """What the model is sent for ``data``, which must be showable."""
    prepared = prepare_image(data)
    assert isinstance(prepared, PreparedImage), prepared
    return prepared
