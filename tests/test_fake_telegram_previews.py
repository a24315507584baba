"""The fake Telegram's preview methods (drafts, deletions, edits with keyboards, flood
holds), driven through python-telegram-bot's real ``Bot``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
import telegram
from telegram import InlineKeyboardButton, InlineKeyboardMarkup
from telegram.error import BadRequest, RetryAfter

from adapters.telegram.api_errors import retry_seconds
from tests.fakes.telegram_server import DEFAULT_GROUP_ID, DEFAULT_USER, FakeTelegram

USER_ID = DEFAULT_USER["id"]


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as server:
        yield server


@pytest.fixture
async def bot(fake: FakeTelegram) -> AsyncIterator[telegram.Bot]:
    client = telegram.Bot(fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url)
    async with client:
        yield client


async def test_drafts_go_to_private_chats_with_a_draft_id(
    fake: FakeTelegram, bot: telegram.Bot
) -> None:
    before = time.monotonic()
    assert await bot.send_message_draft(USER_ID, 7, "Hel") is True
    assert await bot.send_message_draft(USER_ID, 7, "") is True  # "Thinking…"
    with pytest.raises(BadRequest, match="private chats"):
        await bot.send_message_draft(DEFAULT_GROUP_ID, 7, "Hello")
    with pytest.raises(BadRequest, match="(?i)draft_id"):
        await bot.send_message_draft(USER_ID, 0, "Hello")
    with pytest.raises(BadRequest, match="too long"):
        await bot.send_message_draft(USER_ID, 7, "x" * 4097)

    assert [(d.chat_id, d.draft_id, d.text) for d in fake.drafts_to(USER_ID)] == [
        (USER_ID, 7, "Hel"),
        (USER_ID, 7, ""),
    ]
    assert before <= fake.drafts[0].at <= fake.drafts[1].at
    assert fake.sent == []  # a draft is no message


async def test_the_bot_deletes_its_own_messages(fake: FakeTelegram, bot: telegram.Bot) -> None:
    sent = await bot.send_message(DEFAULT_GROUP_ID, "preview")

    assert await bot.delete_message(DEFAULT_GROUP_ID, sent.message_id) is True
    with pytest.raises(BadRequest, match="(?i)message to delete not found"):
        await bot.delete_message(DEFAULT_GROUP_ID, sent.message_id)
    with pytest.raises(BadRequest, match="(?i)message to edit not found"):
        await bot.edit_message_text("x", chat_id=DEFAULT_GROUP_ID, message_id=sent.message_id)
    assert [(d.chat_id, d.message_id) for d in fake.deletions] == [
        (DEFAULT_GROUP_ID, sent.message_id)
    ]


async def test_an_edit_keeps_the_keyboard_it_is_given_and_drops_one_it_is_not(
    fake: FakeTelegram, bot: telegram.Bot
) -> None:
    keyboard = InlineKeyboardMarkup([[InlineKeyboardButton("Yes", callback_data="y")]])
    sent = await bot.send_message(USER_ID, "preview")

    await bot.edit_message_text(
        "final", chat_id=USER_ID, message_id=sent.message_id, reply_markup=keyboard
    )
    with pytest.raises(BadRequest, match="(?i)message is not modified"):
        await bot.edit_message_text(
            "final", chat_id=USER_ID, message_id=sent.message_id, reply_markup=keyboard
        )
    await bot.edit_message_text("final", chat_id=USER_ID, message_id=sent.message_id)

    with_keyboard, without = fake.edits
    assert with_keyboard.reply_markup == keyboard.to_dict()
    assert without.reply_markup is None
    assert "reply_markup" not in fake.messages[(USER_ID, sent.message_id)]


async def test_a_flood_429_holds_every_call_to_its_chat_for_the_pause(
    fake: FakeTelegram, bot: telegram.Bot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")  # retry_after as a timedelta, no warning
    fake.fail("sendMessageDraft", retry_after=5, flood=True)
    with pytest.raises(RetryAfter):
        await bot.send_message_draft(USER_ID, 1, "a")
    with pytest.raises(RetryAfter) as held:
        await bot.send_message(USER_ID, "the final")
    other = await bot.send_message(DEFAULT_GROUP_ID, "another chat is not held")

    assert retry_seconds(held.value) in (4.0, 5.0)  # what is left of the pause
    assert other.text == "another chat is not held"
    assert [m.chat_id for m in fake.sent] == [DEFAULT_GROUP_ID]
    assert [call.method for call in fake.requests if call.method != "getMe"] == [
        "sendMessageDraft",
        "sendMessage",
        "sendMessage",
    ]
