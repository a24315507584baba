"""Voice notes in and spoken replies out, end to end: the real python-telegram-bot
against the fake Bot API, the real openai client against the fake model server's chat
and audio routes."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from core.errors import ConfigError
from gateway.app import create_app
from gateway.config import load_settings
from tests.fakes.discord_payloads import VOICE_MESSAGE
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_audio import SPOKEN
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegram
from tests.gateway_server import RunningGateway, running_gateway, tool_result

VOICE = b"OggS\x00\x02 a recorded voice note"


@asynccontextmanager
async def telegram_gateway(
    home: Path, tg: FakeTelegram, model: FakeOpenAIServer | None, **env: str
) -> AsyncIterator[RunningGateway]:
    environment = {
        **(model.gateway_env() if model is not None else {}),
        **tg.gateway_env(TELEGRAM_ALLOW_ALL_USERS="true"),
        # A failed speech call is retried at once, not after half a second.
        "CHATGATE_MODEL__RETRY_BASE_SECONDS": "0",
        **env,
    }
    async with running_gateway(home, environment) as gw:
        yield gw


def rows(home: Path, sql: str) -> list[dict[str, Any]]:
    with sqlite3.connect(home / "state.db") as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql)]


def stored_user_texts(home: Path) -> list[str]:
    return [r["content"] for r in rows(home, "SELECT content FROM messages WHERE role = 'user'")]


def sent_user_text(model: FakeOpenAIServer, n: int = 0) -> str:
    content = model.requests[n]["messages"][-1]["content"]
    assert isinstance(content, str)
    return content


async def test_a_voice_note_is_transcribed_stored_and_answered(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.audio.transcribe("what is the capital of France?")
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(tg.voice_message(VOICE))
        [reply] = await tg.wait_sent(1)
        tg.push_update(tg.command_message("new", chat=None))
        await tg.wait_sent(2)
        fake_openai.reply_tool_call("session_search", {"query": "capital France"})
        fake_openai.reply_text("You asked about France.")
        tg.push_update(tg.private_message("what did I ask in my voice note?"))
        await tg.wait_sent(3)

    [upload] = fake_openai.audio.transcriptions
    assert upload.data == VOICE  # the bytes Telegram served, unchanged
    assert upload.filename.endswith(".ogg")  # not Telegram's .oga, which OpenAI refuses
    assert upload.model == "whisper-1"
    said = "[voice note] what is the capital of France?"
    assert sent_user_text(fake_openai) == said  # the transcript is the person's message
    assert stored_user_texts(home)[0] == said  # stored as the person's words
    assert reply.text == f"echo: {said}"
    [hit] = tool_result(fake_openai.requests[2])["results"]  # session_search finds it
    assert said in [m["content"] for m in hit["window"] if m.get("anchor")]


async def test_an_audio_file_with_a_caption_is_transcribed_under_its_name(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.audio.transcribe("  welcome to the   weekly meeting ")
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(tg.audio_message(b"ID3 meeting", caption="summarise this"))
        await tg.wait_sent(1)

    [upload] = fake_openai.audio.transcriptions
    assert (upload.data, upload.filename) == (b"ID3 meeting", "talk.mp3")
    expected = "summarise this\n[audio talk.mp3] welcome to the weekly meeting"
    assert stored_user_texts(home) == [expected]


async def test_with_stt_off_the_model_gets_the_saved_file_path(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with (
        FakeTelegram() as tg,
        telegram_gateway(home, tg, fake_openai, CHATGATE_STT__ENABLED="false"),
    ):
        tg.push_update(tg.voice_message(VOICE))
        await tg.wait_sent(1)

    assert fake_openai.audio.transcriptions == []
    text = sent_user_text(fake_openai)
    assert text.startswith("[voice note, not transcribed (stt.enabled is off): ")
    path = Path(text.rsplit(": ", 1)[1].rstrip("]"))
    assert path.read_bytes() == VOICE  # noqa: ASYNC240 - the test's own check


async def test_a_failed_transcription_is_one_line_the_model_answers(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.audio.fail_transcription(status=400, message="unsupported file")
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(tg.voice_message(VOICE, caption="listen"))
        [reply] = await tg.wait_sent(1)

    line = (
        "[voice note, not transcribed: the speech-to-text service refused the file; "
        "ask them to send it again or type it]"
    )
    assert sent_user_text(fake_openai) == f"listen\n{line}"
    assert len(fake_openai.requests) == 1  # one model call answers it; nothing retried
    assert reply.text == f"echo: listen\n{line}"
    assert len(tg.sent) == 1


async def test_a_transcription_that_fails_for_a_moment_is_retried(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.audio.fail_transcription(status=503)
    fake_openai.audio.transcribe("second time lucky")
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(tg.voice_message(VOICE))
        await tg.wait_sent(1)

    assert [u.data for u in fake_openai.audio.transcriptions] == [VOICE, VOICE]
    assert stored_user_texts(home) == ["[voice note] second time lucky"]


async def test_with_the_offline_model_and_no_server_the_note_says_so(home: Path) -> None:
    async with FakeTelegram() as tg, telegram_gateway(home, tg, None):
        tg.push_update(tg.voice_message(VOICE))
        [reply] = await tg.wait_sent(1)

    [stored] = stored_user_texts(home)
    assert stored.startswith(
        "[voice note, not transcribed: no speech-to-text server is set (stt.base_url); "
    )
    assert "not transcribed" in reply.text  # the offline model answered the line


async def test_a_spoken_reply_is_stored_and_attached_to_the_answer(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.audio.transcribe("tell me a joke")
    fake_openai.reply_text("Why did the **chicken** cross the road?")
    async with (
        FakeTelegram() as tg,
        telegram_gateway(
            home, tg, fake_openai, CHATGATE_TTS__ENABLED="true", CHATGATE_TTS__VOICE="nova"
        ),
    ):
        tg.push_update(tg.voice_message(VOICE))
        [voice] = await tg.wait_files(1)
        tg.push_update(tg.private_message("and in writing?"))  # no voice note: no speech
        [written] = await tg.wait_sent(1)

    [speech] = fake_openai.audio.speech_requests
    assert speech == {
        "input": "Why did the chicken cross the road?",  # read aloud without the marks
        "model": "tts-1",
        "voice": "nova",
        "response_format": "opus",
    }
    # The answer is the voice note's caption, the bold as an entity.
    assert (voice.method, voice.data) == ("sendVoice", SPOKEN)
    assert voice.caption == "Why did the chicken cross the road?"
    assert written.text == "echo: and in writing?"
    assert len(tg.sent_files) == 1  # the written question got no voice note
    [file] = rows(home, "SELECT f.* FROM outbox_files f JOIN outbox o ON o.id = f.outbox_id")
    assert (file["kind"], file["mime"], file["name"]) == ("voice", "audio/ogg", "reply.ogg")
    stored = home / "media" / file["sha256"][:2] / file["sha256"]
    assert stored.read_bytes() == SPOKEN  # noqa: ASYNC240 - the test's own check
    assert file["size"] == len(SPOKEN)


async def test_a_failed_spoken_reply_sends_the_text_alone(
    home: Path, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    fake_openai.audio.transcribe("are you there")
    fake_openai.reply_text("Yes, I am here and listening.")
    fake_openai.audio.fail_speech(status=400)
    async with (
        FakeTelegram() as tg,
        telegram_gateway(home, tg, fake_openai, CHATGATE_TTS__ENABLED="true"),
    ):
        tg.push_update(tg.voice_message(VOICE))
        [reply] = await tg.wait_sent(1)

    assert len(fake_openai.audio.speech_requests) == 1
    assert "Yes, I am here and listening." in reply.text
    assert rows(home, "SELECT * FROM outbox_files") == []
    failures = [r.getMessage() for r in caplog.records if "spoken reply failed" in r.getMessage()]
    assert len(failures) == 1
    assert "listening" not in failures[0]  # logged without the reply's text


def test_spoken_replies_without_a_speech_server_refuse_to_start(home: Path) -> None:
    settings = load_settings(home, {"CHATGATE_TTS__ENABLED": "true"})
    with pytest.raises(ConfigError) as info:
        create_app(settings)
    assert info.value.key == "tts.base_url"


async def test_discord_voice_messages_and_audio_files_are_transcribed(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.audio.transcribe("meet me at noon")
    fake_openai.audio.transcribe("chapter one")
    async with FakeDiscord() as dc:
        env = {**fake_openai.gateway_env(), **dc.gateway_env(DISCORD_ALLOW_ALL_USERS="true")}
        async with running_gateway(home, env):
            await dc.wait_ready(1)
            dc.dm("", attachments=[(VOICE_MESSAGE, VOICE, "audio/ogg")])
            dc.dm("", attachments=[("book.m4a", b"m4a bytes", "audio/mp4")])
            await dc.wait_sent(2)

    uploads = [(u.filename, u.data) for u in fake_openai.audio.transcriptions]
    assert uploads == [(VOICE_MESSAGE, VOICE), ("book.m4a", b"m4a bytes")]
    assert stored_user_texts(home) == [
        "[voice note] meet me at noon",
        "[audio book.m4a] chapter one",
    ]
