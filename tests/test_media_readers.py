"""The pieces of voice and document intake a fake server cannot reach: what a PDF or a
text file yields, the names uploads get, what a voice reads aloud, and the settings."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pypdf import PdfWriter

from core.errors import ConfigError
from core.media.documents import decoded
from core.media.intake import UserInput
from core.media.notes import swap_note
from core.media.pdf import DAMAGED, ENCRYPTED, NO_TEXT, pdf_text
from core.media.spoken import spoken_text
from core.media.voice import upload_name
from core.messages import Attachment
from gateway.config import load_settings
from tests.pdf_samples import encrypted_pdf, text_pdf


def test_a_pdf_gives_its_pages_text_in_order() -> None:
    read = pdf_text(text_pdf("first page", "second page"), 1000)
    assert (read.text, read.pages_read, read.pages, read.cut) == (
        "first page\n\nsecond page",
        2,
        2,
        False,
    )


def test_a_long_pdf_stops_reading_at_the_limit() -> None:
    read = pdf_text(text_pdf(*(f"page {n} " + "x" * 90 for n in range(50))), 250)
    assert len(read.text) == 250
    assert (read.pages_read, read.pages, read.cut) == (3, 50, True)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (text_pdf("", ""), NO_TEXT),  # pages of pictures: a scan
        (b"%PDF-1.4\n1 0 obj <</Type /Catalog", DAMAGED),
        (b"", DAMAGED),
        (b"<html>not a pdf</html>", DAMAGED),
        (encrypted_pdf("the plan"), ENCRYPTED),
    ],
)
def test_a_pdf_that_cannot_be_read_says_why(data: bytes, problem: str) -> None:
    read = pdf_text(data, 1000)
    assert (read.text, read.problem) == ("", problem)


def test_a_pdf_locked_only_against_printing_is_read() -> None:
    writer = PdfWriter(clone_from=io.BytesIO(text_pdf("open to read")))
    writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    assert pdf_text(out.getvalue(), 1000).text == "open to read"


def test_text_is_utf8_without_its_bom_and_a_split_last_character_is_dropped() -> None:
    assert decoded("\ufeffcafé".encode(), 100).text == "café"
    cut = "naïve".encode()[:3]  # the ï split in two
    assert decoded(cut, 100, more=True).text == "na"
    assert decoded(cut, 100, more=True).cut


def test_a_stray_latin1_byte_is_replaced_but_mostly_foreign_bytes_are_refused() -> None:
    assert decoded(b"price: 5\xa3 " + b"ok " * 50, 1000).text.startswith("price: 5\ufffd ")
    assert decoded("é".encode("latin-1") * 50, 1000).problem == "it is not UTF-8 text"
    assert decoded(b"   \n", 1000).problem == "it is empty"


@pytest.mark.parametrize(
    ("name", "mime", "sent_as"),
    [
        ("voice-abc.ogg", "audio/ogg", "voice-abc.ogg"),
        ("file_12.oga", "audio/ogg", "file_12.ogg"),  # a chat app's name; OpenAI wants .ogg
        ("talk", "audio/mpeg", "talk.mp3"),
        ("memo.m4a", "audio/x-m4a; codecs=aac", "memo.m4a"),
        ("strange.xyz", "audio/x-unknown", "strange.xyz"),
    ],
)
def test_uploads_are_named_by_their_type(name: str, mime: str, sent_as: str) -> None:
    assert upload_name(Attachment("/cache/x", mime, name, 10, "voice")) == sent_as


def test_a_spoken_reply_drops_markdown_marks() -> None:
    reply = "# Plan\n**Bold** and _soft_ words, see [the docs](https://x.y/z).\n```py\nx = 1\n```"
    assert spoken_text(reply) == "Plan\nBold and soft words, see the docs.\n\nx = 1"


def test_a_readers_line_takes_the_place_of_the_adapters() -> None:
    voice = Attachment("/cache/telegram/U1-voice.ogg", "audio/ogg", "voice.ogg", 9, "voice")
    into = UserInput("hi\n[attached voice.ogg (audio/ogg, 9 bytes): /cache/telegram/U1-voice.ogg]")
    swap_note(into, voice, "[voice note] hello")
    assert into.text == "hi\n[voice note] hello"
    bare = UserInput("")
    swap_note(bare, voice, "[voice note] hello")
    assert bare.text == "[voice note] hello"


@pytest.mark.parametrize(
    ("yaml_text", "env", "key"),
    [
        ("", {"CHATGATE_STT__BASE_URL": "ftp://speech.local"}, "stt.base_url"),
        ("", {"CHATGATE_STT__TIMEOUT_SECONDS": "0"}, "stt.timeout_seconds"),
        ("", {"CHATGATE_STT__MAX_BYTES": "0"}, "stt.max_bytes"),
        ("stt:\n  model: ''\n", {}, "stt.model"),
        ("", {"CHATGATE_STT__ENABLED": "maybe"}, "stt.enabled"),
        ("stt:\n  api_key: 12\n", {}, "stt.api_key"),
        ("", {"CHATGATE_TTS__BASE_URL": "speech.local"}, "tts.base_url"),
        ("", {"CHATGATE_TTS__MAX_CHARS": "5000"}, "tts.max_chars"),
        ("tts:\n  voice: ''\n", {}, "tts.voice"),
        ("", {"CHATGATE_TTS__TIMEOUT_SECONDS": "-1"}, "tts.timeout_seconds"),
        ("tts:\n  enabled: sometimes\n", {}, "tts.enabled"),
        ("tts:\n  model: ''\n", {}, "tts.model"),
        ("tts:\n  api_key: [1]\n", {}, "tts.api_key"),
        ("", {"CHATGATE_DOCUMENTS__MAX_CHARS": "10"}, "documents.max_chars"),
        ("", {"CHATGATE_DOCUMENTS__ENABLED": "perhaps"}, "documents.enabled"),
    ],
)
def test_bad_speech_and_document_settings_name_the_key(
    tmp_path: Path, yaml_text: str, env: dict[str, str], key: str
) -> None:
    (tmp_path / "config.yaml").write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path, env)
    assert info.value.key == key


def test_speech_servers_default_to_the_chat_models(tmp_path: Path) -> None:
    from gateway.features.stt import SttSettings, speech_server

    settings = load_settings(
        tmp_path, {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-chat"}
    )
    stt = settings.section(SttSettings)
    server = speech_server(settings, stt.base_url, stt.api_key, model=stt.model, timeout_seconds=5)
    assert server is not None
    assert (server.base_url, server.api_key, server.model) == (
        "http://127.0.0.1:9/v1",
        "sk-chat",
        "whisper-1",
    )
    own = load_settings(
        tmp_path,
        {"OPENAI_API_KEY": "sk-chat", "CHATGATE_STT__BASE_URL": "http://127.0.0.1:8/v1"},
    )
    s = own.section(SttSettings)
    mine = speech_server(own, s.base_url, s.api_key, model=s.model, timeout_seconds=5)
    assert mine is not None
    assert mine.base_url == "http://127.0.0.1:8/v1"
    offline = load_settings(tmp_path, {})
    o = offline.section(SttSettings)
    assert speech_server(offline, o.base_url, o.api_key, model="m", timeout_seconds=5) is None
