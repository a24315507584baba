"""Images posted to the webhook reach a vision model: inline (base64) or fetched from a
url by the gateway, which refuses private addresses unless ``webhook.fetch_private_urls``
is on (these tests turn it on to fetch from a server on 127.0.0.1, and say so)."""

from __future__ import annotations

import base64
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from adapters.webhook.images import PRIVATE, fetch_image
from adapters.webhook.schema import MAX_IMAGE_BYTES
from core.media.images import Refused
from tests.fakes.loopback import LoopbackServer
from tests.fakes.openai_server import FakeOpenAIServer, image_parts
from tests.gateway_server import RunningGateway, running_gateway
from tests.image_files import jpeg, png

PHOTO = jpeg(400, 300)


class ImageHost:
    """A small web server on 127.0.0.1 with a photo, redirects, a 404 and an endless
    body; ``paths`` lists what it was asked for."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        routes = [
            Route("/photo.jpg", self._photo),
            Route("/moved", self._redirect("/photo.jpg")),
            Route("/to-a-file", self._redirect("file:///etc/passwd")),
            Route("/endless", self._endless),
        ]
        self._server = LoopbackServer(Starlette(routes=routes))

    def url(self, path: str) -> str:
        return f"{self._server.url}{path}"

    async def __aenter__(self) -> ImageHost:
        await self._server.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._server.stop()

    async def _photo(self, request: Request) -> Response:
        self.paths.append(request.url.path)
        return Response(PHOTO, media_type="image/jpeg")

    def _redirect(self, to: str) -> Callable[[Request], Awaitable[Response]]:
        async def moved(request: Request) -> Response:
            self.paths.append(request.url.path)
            return RedirectResponse(to, status_code=302)

        return moved

    async def _endless(self, request: Request) -> Response:
        self.paths.append(request.url.path)

        def chunks() -> Iterator[bytes]:
            while True:
                yield b"\xff" * 65_536

        return StreamingResponse(chunks(), media_type="image/jpeg")


@asynccontextmanager
async def gateway(home: Path, model: FakeOpenAIServer, **env: str) -> AsyncIterator[RunningGateway]:
    async with running_gateway(home, {**model.gateway_env(), **env}) as gw:
        yield gw


PRIVATE_ON = {"CHATGATE_WEBHOOK__FETCH_PRIVATE_URLS": "true"}  # the image host is on 127.0.0.1


def inline(data: bytes, mime: str = "image/jpeg") -> dict[str, str]:
    return {"type": "image", "mime": mime, "data_base64": base64.b64encode(data).decode()}


def linked(url: str, mime: str = "image/jpeg") -> dict[str, str]:
    return {"type": "image", "mime": mime, "url": url}


def inbox_text(home: Path) -> list[str]:
    with sqlite3.connect(home / "state.db") as conn:
        return [row[0] for row in conn.execute("SELECT text FROM inbox ORDER BY id")]


async def test_an_inline_image_reaches_the_model_and_the_inbox_keeps_a_path(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with gateway(home, fake_openai) as gw:
        answer = await gw.say("what is this?", attachments=[inline(PHOTO)])

    assert answer.status_code == 200, answer.text
    [part] = image_parts(fake_openai.requests[0])
    assert (part.mime, part.data) == ("image/jpeg", PHOTO)
    [text] = inbox_text(home)
    assert text.startswith("what is this?\n[attached image-1.jpg (image/jpeg, ")
    assert base64.b64encode(PHOTO).decode()[:40] not in text
    [saved] = (home / "cache" / "webhook").iterdir()
    assert saved.read_bytes() == PHOTO  # noqa: ASYNC240 - the test's own check


async def test_images_alone_need_no_text_and_are_sent_in_order(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with gateway(home, fake_openai) as gw:
        answer = await gw.say("", attachments=[inline(PHOTO), inline(png(), "image/png")])

    assert answer.status_code == 200, answer.text
    assert [p.data for p in image_parts(fake_openai.requests[0])] == [PHOTO, png()]


async def test_a_url_is_fetched_by_the_gateway_following_a_redirect(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with ImageHost() as host, gateway(home, fake_openai, **PRIVATE_ON) as gw:
        answer = await gw.say("and this?", attachments=[linked(host.url("/moved"))])

    assert answer.status_code == 200, answer.text
    assert host.paths == ["/moved", "/photo.jpg"]
    assert [p.data for p in image_parts(fake_openai.requests[0])] == [PHOTO]


async def test_a_private_address_is_not_fetched_unless_allowed(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with ImageHost() as host, gateway(home, fake_openai) as gw:
        answer = await gw.say("look", attachments=[linked(host.url("/photo.jpg?sig=s3cret"))])

    assert answer.status_code == 200, answer.text
    assert host.paths == []  # never asked
    assert image_parts(fake_openai.requests[0]) == []
    sent = fake_openai.requests[0]["messages"][-1]["content"]
    shown = host.url("/photo.jpg")  # without the query, where signed urls keep tokens
    assert sent == f"look\n[image-1.jpg from {shown} could not be fetched: {PRIVATE}]"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/to-a-file", "only http and https URLs are fetched"),
        ("/missing.jpg", "the server answered 404"),
        ("/endless", f"it is larger than {MAX_IMAGE_BYTES:,} bytes"),
    ],
)
async def test_a_url_that_gives_no_image_is_one_line(
    home: Path, fake_openai: FakeOpenAIServer, path: str, reason: str
) -> None:
    async with ImageHost() as host, gateway(home, fake_openai, **PRIVATE_ON) as gw:
        answer = await gw.say("see", attachments=[linked(host.url(path))])

    assert answer.status_code == 200, answer.text
    sent = fake_openai.requests[0]["messages"][-1]["content"]
    assert sent == f"see\n[image-1.jpg from {host.url(path)} could not be fetched: {reason}]"


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",  # a cloud's metadata service
        "http://10.1.2.3/photo.jpg",
        "http://[::ffff:127.0.0.1]/photo.jpg",
        "http://[fe80::1]/photo.jpg",
        "http://0.0.0.0/photo.jpg",
    ],
)
async def test_private_and_link_local_addresses_are_refused_before_connecting(url: str) -> None:
    # The loopback guard would fail a connection to any of these with another error.
    assert await fetch_image(url) == Refused(PRIVATE)


@pytest.mark.parametrize(
    ("attachments", "field"),
    [
        ([inline(PHOTO) | {"url": "https://example.com/a.jpg"}], "attachments.0"),
        ([{"type": "image", "mime": "image/jpeg"}], "attachments.0"),
        ([inline(PHOTO, "image/bmp")], "attachments.0.mime"),
        ([inline(PHOTO) | {"data_base64": "not base64!"}], "attachments.0.data_base64"),
        ([linked("ftp://example.com/a.jpg")], "attachments.0.url"),
        ([inline(PHOTO) | {"type": "video"}], "attachments.0.type"),
        ([inline(PHOTO)] * 5, "attachments"),
        ([], "text"),
    ],
    ids=["both", "neither", "mime", "base64", "scheme", "type", "too-many", "no-text"],
)
async def test_a_malformed_attachment_is_422_naming_it(
    home: Path, fake_openai: FakeOpenAIServer, attachments: list[dict[str, Any]], field: str
) -> None:
    async with gateway(home, fake_openai) as gw:
        answer = await gw.say("", attachments=attachments)

    assert answer.status_code == 422
    assert answer.json()["field"] == field
    assert fake_openai.requests == []


async def test_vision_off_sends_a_line_instead_of_the_image(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with gateway(home, fake_openai, CHATGATE_MODEL__VISION="false") as gw:
        answer = await gw.say("what is it?", attachments=[inline(PHOTO)])

    assert answer.status_code == 200, answer.text
    sent = fake_openai.requests[0]["messages"][-1]["content"]
    assert isinstance(sent, str)  # no image part
    assert sent.endswith("\n[image-1.jpg is an image; this model is not shown images]")
    assert not (home / "media").exists()
