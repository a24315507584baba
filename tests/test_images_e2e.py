"""Photos and image files from Telegram and Discord reach a vision model as image parts,
stored once under the home and sent again, the same bytes, after a restart; what cannot
be shown is one line. Also the Anthropic path, through the webhook."""

from __future__ import annotations

import base64
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from core.media.refs import MediaRef, refs_from_json
from core.media.store import MediaStore
from tests.fakes.anthropic_server import FakeAnthropicServer, image_blocks
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import FakeOpenAIServer, image_parts
from tests.fakes.telegram_server import FakeTelegram
from tests.gateway_server import RunningGateway, running_gateway
from tests.image_files import jpeg, png, png_claiming, size_of

PHOTO = jpeg(640, 480)


@asynccontextmanager
async def telegram_gateway(
    home: Path, tg: FakeTelegram, model: FakeOpenAIServer
) -> AsyncIterator[RunningGateway]:
    environment = {**model.gateway_env(), **tg.gateway_env(TELEGRAM_ALLOW_ALL_USERS="true")}
    async with running_gateway(home, environment) as gw:
        yield gw


@asynccontextmanager
async def discord_gateway(
    home: Path, dc: FakeDiscord, model: FakeOpenAIServer
) -> AsyncIterator[RunningGateway]:
    environment = {**model.gateway_env(), **dc.gateway_env(DISCORD_ALLOW_ALL_USERS="true")}
    readies = dc.ready_count
    async with running_gateway(home, environment) as gw:
        await dc.wait_ready(readies + 1)
        yield gw


def stored_images(home: Path) -> list[MediaRef]:
    """The images stored with user messages, oldest first."""
    with sqlite3.connect(home / "state.db") as conn:
        rows = conn.execute("SELECT media FROM messages WHERE role = 'user' ORDER BY id")
        return [ref for (media,) in rows for ref in refs_from_json(media)]


def user_text(request: dict[str, object], index: int = -1) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    content = messages[index]["content"]
    return content if isinstance(content, str) else content[0]["text"]


async def test_a_photo_is_shown_to_the_model_and_sent_again_after_a_restart(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg:
        async with telegram_gateway(home, tg, fake_openai):
            tg.push_update(tg.photo_message(PHOTO, caption="what is this?"))
            await tg.wait_sent(1)
        async with telegram_gateway(home, tg, fake_openai):
            tg.push_update(tg.private_message("and what colour is it?"))
            await tg.wait_sent(2)

    first, second = fake_openai.requests
    [ref] = stored_images(home)
    stored = MediaStore(home / "media").read_sync(ref)
    [part] = image_parts(first)
    assert (part.mime, part.data) == ("image/jpeg", stored)
    assert stored == PHOTO  # already fit for the model: kept byte for byte
    assert image_parts(second) == [part]  # the restarted gateway sent the same bytes
    assert user_text(first).startswith("what is this?\n[attached photo-")
    assert user_text(second) == "and what colour is it?"


async def test_an_image_file_too_large_is_downscaled_and_junk_is_one_line(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    big = jpeg(3000, 2000)
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(tg.document_message(big, file_name="big.jpg", mime_type="image/jpeg"))
        await tg.wait_sent(1)
        fake = tg.document_message(b"<html>not a picture</html>", file_name="fake.png")
        fake["message"]["document"]["mime_type"] = "image/png"
        tg.push_update(fake)
        await tg.wait_sent(2)

    downscaled, junk = fake_openai.requests
    [part] = image_parts(downscaled)
    assert size_of(part.data) == (1568, 1045)
    assert image_parts(junk, message=-1) == []
    lines = user_text(junk).splitlines()
    assert lines[-1] == (
        "[fake.png could not be shown to the model: "
        "it is not an image in a format this gateway reads]"
    )
    assert len(lines) == 2  # the adapter's line naming the file, and that one


async def test_a_discord_image_is_shown_and_a_decompression_bomb_is_refused(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    picture = png(300, 200)
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        dc.dm("what is it?", attachments=[("cat.png", picture, "image/png")])
        await dc.wait_sent(1)
        dc.dm("and this?", attachments=[("bomb.png", png_claiming(9000, 6000), "image/png")])
        await dc.wait_sent(2)

    shown, bombed = fake_openai.requests
    [part] = image_parts(shown)
    assert (part.mime, part.data) == ("image/png", picture)
    # The bomb is not sent; the earlier image still is, with its message.
    assert image_parts(bombed) == [part]
    assert user_text(bombed).endswith(
        "[bomb.png could not be shown to the model: it is too large to decode "
        "(9000×6000 pixels); the limit is 50 megapixels]"
    )
    assert len(stored_images(home)) == 1


async def test_anthropic_gets_the_image_as_a_block(
    home: Path, fake_anthropic: FakeAnthropicServer
) -> None:
    env = {
        "CHATGATE_MODEL_PROVIDER": "anthropic",
        "CHATGATE_MODEL__BASE_URL": fake_anthropic.base_url,
        "ANTHROPIC_API_KEY": fake_anthropic.api_key,
    }
    image = {"type": "image", "mime": "image/jpeg", "data_base64": base64.b64encode(PHOTO).decode()}
    async with running_gateway(home, env) as gw:
        answer = await gw.say("describe it", attachments=[image])

    assert answer.status_code == 200, answer.text
    [request] = fake_anthropic.requests
    assert image_blocks(request) == [("image/jpeg", PHOTO)]
    blocks = request["messages"][-1]["content"]
    assert [b["type"] for b in blocks] == ["image", "text"]
    assert answer.json()["replies"][0]["text"].startswith("echo: describe it")
