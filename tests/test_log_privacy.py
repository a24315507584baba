"""No message text and no token in the log of ``chatgate run``, even at debug level.

A real ``chatgate run`` subprocess, its Telegram adapter (the real python-telegram-bot,
httpx and openai clients, their loggers live) polling the fake Bot API, a real turn
through the fake model and a reply; then its whole log is read.
"""

from __future__ import annotations

import asyncio
import io
import logging
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway import log_privacy
from gateway.config import load_settings
from gateway.log_privacy import CORE_BODY_LOGGERS, SecretRedactor
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegram
from tests.test_cli import client_for, gateway_process, run_log, wait_ready

TOKEN = "987654321:AAHk3xQ9vLm2Pz7RtY4wNc8Bj5Gd1Fs6Eu0"  # the shape of a real bot token
SECRET_PART = TOKEN.split(":", 1)[1]
TEXT = "Marmalade zeppelin 7731 over Quixotic Harbour"


async def debug_log_of_a_turn(home: Path, model: FakeOpenAIServer, **env: str) -> str:
    """Run one Telegram turn with a reply through ``chatgate run`` at debug level."""
    async with FakeTelegram(token=TOKEN) as tg:
        environment = {
            **model.gateway_env(),
            **tg.gateway_env(TELEGRAM_ALLOW_ALL_USERS="true"),
            "CHATGATE_LOG_LEVEL": "debug",
            **env,
        }
        with gateway_process(home, environment) as (proc, url):
            async with client_for(url) as client:
                await wait_ready(proc, client)
            tg.push_update(tg.private_message(TEXT))
            [reply] = await tg.wait_sent(1)
            proc.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(proc.wait, 30) == 0
    assert TEXT in reply.text  # the turn really ran and answered
    return run_log(home)


async def test_debug_log_has_neither_the_token_nor_the_message(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    log = await debug_log_of_a_turn(home, fake_openai)

    assert "DEBUG" in log  # the level was really debug
    assert SECRET_PART not in log
    assert "Marmalade zeppelin" not in log
    assert "Quixotic Harbour" not in log


async def test_log_bodies_lets_the_text_through_but_never_the_token(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    log = await debug_log_of_a_turn(home, fake_openai, CHATGATE_LOG_BODIES="true")

    assert "Marmalade zeppelin" in log
    assert SECRET_PART not in log


# -- secrets that still reach a handler are redacted --------------------------------------


@pytest.fixture
def root_stream() -> Iterator[io.StringIO]:
    """A handler on the root logger at DEBUG, as ``chatgate run --log-level debug`` has;
    logging is restored after."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    names = ("", "telegram", *CORE_BODY_LOGGERS)
    levels = {name: logging.getLogger(name).level for name in names}
    logging.root.addHandler(handler)
    logging.root.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        logging.root.removeHandler(handler)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        for other in logging.root.handlers:  # pytest's own, which install() also filtered
            for added in [f for f in other.filters if isinstance(f, SecretRedactor)]:
                other.removeFilter(added)


def fail_with_the_url() -> None:
    raise RuntimeError(f"Client error for url 'https://api.example/bot{TOKEN}/getMe'")


def test_configured_secrets_are_redacted_in_messages_and_tracebacks(
    home: Path, root_stream: io.StringIO
) -> None:
    api_key = "sk-test-7f3a9c2e5b8d1f4a"
    settings = load_settings(home, {"TELEGRAM_BOT_TOKEN": TOKEN, "OPENAI_API_KEY": api_key})
    log_privacy.install(settings)
    library = logging.getLogger("telegram.ext.Updater")
    library.error("request to https://api.example/bot%s/getUpdates failed", TOKEN)
    logging.getLogger("somelib").warning("using key %s", api_key)
    try:
        fail_with_the_url()
    except RuntimeError:
        logging.getLogger("somelib").exception("call failed")

    written = root_stream.getvalue()
    assert SECRET_PART not in written
    assert api_key not in written
    assert written.count("<redacted>") == 3
    assert "call failed" in written
    assert "getUpdates failed" in written


def test_library_debug_lines_are_capped_unless_bodies_may_be_logged(
    home: Path, root_stream: io.StringIO
) -> None:
    logging.getLogger("telegram").setLevel(logging.NOTSET)
    quiet = load_settings(home, {"TELEGRAM_BOT_TOKEN": TOKEN})
    log_privacy.install(quiet)
    logging.getLogger("telegram.Bot").debug("sendMessage with text=%s", TEXT)
    logging.getLogger("telegram.Bot").info("started")
    assert TEXT not in root_stream.getvalue()
    assert "started" in root_stream.getvalue()
