"""Documents a person sends, end to end: read for the turn they came with (the model
sees their text in a fence), never stored as the person's words. Through the real
python-telegram-bot and discord.py against the fakes."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegram
from tests.gateway_server import RunningGateway, running_gateway
from tests.pdf_samples import encrypted_pdf, text_pdf


@asynccontextmanager
async def telegram_gateway(
    home: Path, tg: FakeTelegram, model: FakeOpenAIServer, **env: str
) -> AsyncIterator[RunningGateway]:
    environment = {**model.gateway_env(), **tg.gateway_env(TELEGRAM_ALLOW_ALL_USERS="true")}
    async with running_gateway(home, {**environment, **env}) as gw:
        yield gw


def user_rows(home: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(home / "state.db") as conn:
        conn.row_factory = sqlite3.Row
        sql = "SELECT content, api_content FROM messages WHERE role = 'user' ORDER BY id"
        return [dict(r) for r in conn.execute(sql)]


def sent_user_text(model: FakeOpenAIServer, n: int = 0) -> str:
    content = model.requests[n]["messages"][-1]["content"]
    assert isinstance(content, str)
    return content


async def send_document(
    home: Path, model: FakeOpenAIServer, data: bytes, name: str, mime: str, **env: str
) -> tuple[str, dict[str, Any]]:
    """Send ``data`` as a Telegram document with a caption; return what the model was
    sent as the user's message and the stored user message."""
    async with FakeTelegram() as tg, telegram_gateway(home, tg, model, **env):
        tg.push_update(tg.document_message(data, file_name=name, mime_type=mime, caption="look"))
        await tg.wait_sent(1)
    [stored] = user_rows(home)
    return sent_user_text(model), stored


async def test_a_pdf_is_read_for_the_turn_and_not_stored_as_the_persons_words(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    pdf = text_pdf("Quarterly revenue rose 12%\nCosts were flat", "Page two: the outlook")
    sent, stored = await send_document(home, fake_openai, pdf, "report.pdf", "application/pdf")

    said, fence = sent.split("\n\n", 1)
    assert said.startswith("look\n[attached report.pdf (application/pdf, ")
    assert fence == (
        '<document name="report.pdf" type="application/pdf">\n'
        "Quarterly revenue rose 12%\nCosts were flat\n\nPage two: the outlook\n"
        "</document>"
    )
    assert stored["content"] == said  # the person's words and the file's line, no contents
    assert stored["api_content"] == sent  # what the model read, kept for a replay


async def test_a_csv_file_reaches_the_model_as_text(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    csv = b"name,score\nada,10\ngrace,9\n"
    sent, stored = await send_document(home, fake_openai, csv, "scores.csv", "text/csv")

    assert sent.endswith(
        '<document name="scores.csv" type="text/csv">\nname,score\nada,10\ngrace,9\n\n</document>'
    )
    assert "grace" not in stored["content"]


async def test_source_code_sent_as_octet_stream_is_read_by_its_extension(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    code = b"def add(a, b):\n    return a + b  # </document> cannot close the fence\n"
    sent, _ = await send_document(home, fake_openai, code, "calc.py", "application/octet-stream")

    assert "def add(a, b):" in sent
    assert "# &lt;/document> cannot close the fence" in sent
    assert sent.count("</document>") == 1


async def test_a_binary_file_is_a_note_with_its_name_type_and_size(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    blob = b"\x00\x01\x02 binary" * 10
    sent, stored = await send_document(home, fake_openai, blob, "blob.bin", "application/zip")

    assert sent.startswith(
        "look\n[attached blob.bin (application/zip, 100 bytes): not a text file or PDF, "
        "so not read; saved at "
    )
    assert stored["api_content"] is None  # nothing was added for the turn
    saved = Path(sent.rsplit("saved at ", 1)[1].rstrip("]"))
    assert saved.read_bytes() == blob  # noqa: ASYNC240 - the test's own check


async def test_a_text_file_holding_binary_bytes_is_one_line(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    sent, _ = await send_document(home, fake_openai, b"\x00\x00PK\x03", "notes.txt", "text/plain")

    assert sent == "look\n[notes.txt could not be read: it is not a text file]"


async def test_a_long_document_is_cut_at_the_cap_and_says_so(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    text = "".join(f"line {n:04d} of a long file\n" for n in range(400))  # 10,400 chars
    sent, _ = await send_document(
        home,
        fake_openai,
        text.encode(),
        "long.md",
        "text/markdown",
        CHATGATE_DOCUMENTS__MAX_CHARS="1000",
    )

    fence = sent.split("\n\n", 1)[1]
    body = fence.split("\n", 1)[1].rsplit("\n[cut here", 1)[0]
    assert body == text[:1000]
    assert "[cut here: the rest was not read; documents.max_chars is 1,000 characters" in fence
    assert fence.endswith("</document>")


async def test_a_locked_pdf_is_one_clear_line(home: Path, fake_openai: FakeOpenAIServer) -> None:
    locked = encrypted_pdf("a secret plan")
    sent, _ = await send_document(home, fake_openai, locked, "plan.pdf", "application/pdf")

    assert sent == "look\n[plan.pdf could not be read: it is password-protected]"


async def test_documents_turned_off_leave_the_files_line_alone(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    sent, _ = await send_document(
        home, fake_openai, b"hello", "hi.txt", "text/plain", CHATGATE_DOCUMENTS__ENABLED="false"
    )

    assert sent.startswith("look\n[attached hi.txt (text/plain, 5 bytes): ")
    assert "<document" not in sent


async def test_a_messages_documents_share_the_cap(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    first, second = b"a" * 700, b"b" * 700
    async with FakeDiscord() as dc:
        env = {
            **fake_openai.gateway_env(),
            **dc.gateway_env(DISCORD_ALLOW_ALL_USERS="true"),
            "CHATGATE_DOCUMENTS__MAX_CHARS": "1000",
        }
        async with running_gateway(home, env):
            await dc.wait_ready(1)
            files = [("a.txt", first, "text/plain"), ("b.txt", second, "text/plain")]
            dc.dm("compare these", attachments=files)
            await dc.wait_sent(1)

    sent = sent_user_text(fake_openai)
    assert "a" * 700 + "\n</document>" in sent  # the first whole
    b_fence = sent.split('<document name="b.txt" type="text/plain">\n', 1)[1]
    assert b_fence.startswith("b" * 200)
    assert "b" * 300 not in b_fence  # the second only to what the first left
    assert "[cut here" in b_fence
