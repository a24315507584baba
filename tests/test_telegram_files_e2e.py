"""Files a reply carries, on Telegram end to end: the real python-telegram-bot against
the fake Bot API. ``send_file`` photos and documents, a spoken reply's voice note, and a
restart between the text and the file."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from core.media.store import MediaStore
from core.models.base import ToolSpec
from core.tools import ToolContext
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import DEFAULT_USER, FakeTelegram
from tests.gateway_server import RunningGateway, running_gateway

DM = DEFAULT_USER["id"]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
PDF = b"%PDF-1.4\n" + b"report body " * 400 + b"\n%%EOF\n"
OGG = b"OggS\x00\x02" + bytes(range(200)) * 5


@asynccontextmanager
async def telegram_gateway(
    home: Path, tg: FakeTelegram, model: FakeOpenAIServer, **kwargs: Any
) -> AsyncIterator[RunningGateway]:
    environment = {**model.gateway_env(), **tg.gateway_env(TELEGRAM_ALLOW_ALL_USERS="true")}
    async with running_gateway(home, environment, **kwargs) as gw:
        yield gw


def in_outbox(home: Path, name: str, data: bytes) -> None:
    folder = home / "outbox"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


def rows(home: Path, sql: str) -> list[dict[str, Any]]:
    with sqlite3.connect(home / "state.db") as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql)]


async def delivered(home: Path) -> None:
    """Wait (bounded) until every reply is marked delivered: nothing more will be sent."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while {r["status"] for r in rows(home, "SELECT status FROM outbox")} != {"delivered"}:
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)  # noqa: ASYNC110 - polling rows another task writes


class SpeakTool:
    """Stands in for a spoken reply: stores an Ogg voice note and attaches it."""

    spec = ToolSpec(name="speak", description="Say it aloud.", parameters={"type": "object"})

    def __init__(self, home: Path) -> None:
        self._media = MediaStore(home / "media")

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        ref = await self._media.put(OGG, "audio/ogg", kind="voice", name="reply.ogg")
        assert ctx.attach is not None
        ctx.attach(ref)
        return json.dumps({"success": True})


async def test_an_image_arrives_as_a_photo_and_a_pdf_as_a_document_after_the_text(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    in_outbox(home, "chart.png", PNG)
    in_outbox(home, "q3.pdf", PDF)
    fake_openai.reply_tool_calls(
        [("send_file", {"path": "chart.png"}), ("send_file", {"path": "q3.pdf", "caption": "Q3"})]
    )
    fake_openai.reply_text("Here are the **chart** and the report.")
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.fail("sendPhoto", status=429, retry_after=1)  # waited out, sent once
        tg.push_update(tg.private_message("send me the numbers"))
        photo, document = await tg.wait_files(2)
        await delivered(home)
        [text] = tg.sent

    assert text.text == "Here are the chart and the report."
    media_calls = [c for c in tg.calls if c in {"sendMessage", "sendPhoto", "sendDocument"}]
    assert media_calls == ["sendMessage", "sendPhoto", "sendPhoto", "sendDocument"]
    assert (photo.method, photo.chat_id, photo.data) == ("sendPhoto", DM, PNG)
    assert photo.message["photo"][0]["file_size"] == len(PNG)
    assert (document.method, document.data, document.file_name) == ("sendDocument", PDF, "q3.pdf")
    assert document.mime_type == "application/pdf"
    assert document.caption == "Q3"
    assert document.message["document"]["file_name"] == "q3.pdf"


async def test_a_picture_telegram_cannot_show_as_a_photo_goes_as_a_document(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    in_outbox(home, "broken.png", b"these bytes are no image at all")
    fake_openai.reply_tool_call("send_file", {"path": "broken.png"})
    fake_openai.reply_text("")  # files only: no text message
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(tg.private_message("send it"))
        [sent] = await tg.wait_files(1)
        await delivered(home)

    assert tg.calls.count("sendPhoto") == 1  # refused by Telegram
    assert (sent.method, sent.file_name) == ("sendDocument", "broken.png")
    assert sent.data == b"these bytes are no image at all"
    assert tg.sent == []


async def test_after_a_restart_between_the_text_and_the_file_each_is_sent_once(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    in_outbox(home, "q3.pdf", PDF)
    fake_openai.reply_tool_call("send_file", {"path": "q3.pdf"})
    fake_openai.reply_text("The report follows.")
    async with FakeTelegram() as tg:
        async with telegram_gateway(home, tg, fake_openai):
            tg.fail("sendDocument", status=500, times=1000)
            tg.push_update(tg.private_message("report please"))
            await tg.wait_call("sendDocument", 1)
        [row] = rows(home, "SELECT status, parts_sent FROM outbox")
        tg.clear_failures()
        async with telegram_gateway(home, tg, fake_openai):
            [document] = await tg.wait_files(1)
            await delivered(home)

    assert row == {"status": "pending", "parts_sent": 1}
    assert [m.text for m in tg.sent] == ["The report follows."]  # not resent after the restart
    assert document.data == PDF
    assert len(tg.sent_files) == 1


async def test_a_voice_note_opens_the_reply_with_the_text_as_its_caption(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.reply_tool_call("speak", {})
    fake_openai.reply_text("It is *sunny* today.")
    long_answer = "A long spoken answer. " * 60  # over 1,024 characters: no caption
    async with (
        FakeTelegram() as tg,
        telegram_gateway(home, tg, fake_openai, tools=[SpeakTool(home)]),
    ):
        tg.push_update(tg.private_message("weather?"))
        [voice] = await tg.wait_files(1)
        fake_openai.reply_tool_call("speak", {})
        fake_openai.reply_text(long_answer)
        tg.push_update(tg.private_message("tell me more"))
        await tg.wait_files(2)
        [text] = await tg.wait_sent(1)
        second = tg.sent_files[1]

    assert (voice.method, voice.data, voice.file_name) == ("sendVoice", OGG, "reply.ogg")
    assert voice.caption == "It is sunny today."
    assert voice.caption_entities == [{"type": "italic", "offset": 6, "length": 5}]
    assert voice.message["voice"]["file_size"] == len(OGG)
    assert (second.method, second.caption) == ("sendVoice", None)
    assert text.text == long_answer.strip()
    assert tg.calls.index("sendVoice", tg.calls.index("sendVoice") + 1) < tg.calls.index(
        "sendMessage"
    )
