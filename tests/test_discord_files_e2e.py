"""Files a reply carries, on Discord end to end: the real discord.py against the fake
Discord. ``send_file`` attachments after the text, and a file over the upload limit."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
PDF = b"%PDF-1.4\n" + b"report body " * 400 + b"\n%%EOF\n"


@asynccontextmanager
async def discord_gateway(
    home: Path, dc: FakeDiscord, model: FakeOpenAIServer, *, streaming: str = "off"
) -> AsyncIterator[RunningGateway]:
    environment = {**model.gateway_env(), **dc.gateway_env(DISCORD_ALLOW_ALL_USERS="true")}
    # These tests read whole messages; a streamed preview is tested where it says so.
    environment["CHATGATE_DISCORD__STREAMING"] = streaming
    readies = dc.ready_count
    async with running_gateway(home, environment) as gw:
        await dc.wait_ready(readies + 1)
        yield gw


def in_outbox(home: Path, name: str, data: bytes) -> None:
    folder = home / "outbox"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


async def delivered(home: Path) -> None:
    """Wait (bounded) until every reply is marked delivered: nothing more will be sent."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while True:
        with sqlite3.connect(home / "state.db") as conn:
            statuses = {row[0] for row in conn.execute("SELECT status FROM outbox")}
        if statuses == {"delivered"}:
            return
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)  # noqa: ASYNC110 - polling rows another task writes


async def test_files_arrive_as_attachments_after_the_text(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    in_outbox(home, "chart.png", PNG)
    in_outbox(home, "q3.pdf", PDF)
    fake_openai.reply_tool_calls(
        [("send_file", {"path": "chart.png"}), ("send_file", {"path": "q3.pdf", "caption": "Q3"})]
    )
    fake_openai.reply_text("Here are the chart and the report.")
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        asked = dc.dm("send me the numbers")
        text, photo, document = await dc.wait_sent(3)
        await delivered(home)
        sent = list(dc.sent)

    assert len(sent) == 3
    assert (text.content, text.files) == ("Here are the chart and the report.", [])
    assert text.reference_id == asked["id"]
    assert photo.files == [("chart.png", PNG)]
    assert photo.content == ""
    assert document.files == [("q3.pdf", PDF)]
    assert document.content == "Q3"
    assert photo.channel_id == document.channel_id == asked["channel_id"]
    attachments = [m["attachments"] for m in dc.messages[asked["channel_id"]] if m["attachments"]]
    assert [a[0]["filename"] for a in attachments] == ["chart.png", "q3.pdf"]


async def test_a_file_over_the_upload_limit_is_one_clear_line_instead(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    in_outbox(home, "dump.bin", b"\0" * (11 * 1024 * 1024))  # Discord's default: 10 MiB
    fake_openai.reply_tool_call("send_file", {"path": "dump.bin"})
    fake_openai.reply_text("")  # the file only
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        dc.dm("the dump please")
        [line] = await dc.wait_sent(1)
        await delivered(home)
        sent = list(dc.sent)

    assert len(sent) == 1
    assert line.files == []
    assert line.content == "[dump.bin (11.0 MB) is too large to send here: the limit is 10 MB]"


async def test_a_streamed_reply_of_files_alone_takes_its_preview_away(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    in_outbox(home, "chart.png", PNG)
    fake_openai.reply_tool_call("send_file", {"path": "chart.png"})
    fake_openai.reply_text("")  # the file only: no text takes the preview over
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai, streaming="auto"):
        dc.dm("the chart please")
        preview, photo = await dc.wait_sent(2)
        await dc.wait_until(lambda: len(dc.deleted) == 1, what="the preview deleted")
        await delivered(home)
        sent = list(dc.sent)

    assert preview.content == "attaching a file…"
    assert dc.deleted == [(preview.channel_id, preview.id)]
    assert photo.files == [("chart.png", PNG)]
    assert len(sent) == 2
