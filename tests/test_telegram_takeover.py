"""The final reply takes over a group's streamed preview message (``adapters.telegram.send``
and ``takeover``), through python-telegram-bot against the fake Bot API: edited, never
sent beside it; an edit that was already made counts as done; a preview that is gone is
replaced by a new message."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from telegram import Bot

from adapters.telegram.buttons import Keyboards
from adapters.telegram.send import ReplySender
from core.messages import OutboundMessage, ReplyAction
from tests.fakes.telegram_server import DEFAULT_GROUP_ID, FakeTelegram

GROUP = DEFAULT_GROUP_ID


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def sender(tg: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ReplySender]:
    monkeypatch.setenv("PTB_TIMEDELTA", "1")  # as the adapter runs it
    async with Bot(tg.token, base_url=tg.base_url) as bot:
        yield ReplySender(bot, Keyboards())


async def preview_in(tg: FakeTelegram, text: str = "Once upon") -> int:
    """A preview message the bot showed in the group (as the streamed preview does)."""
    async with Bot(tg.token, base_url=tg.base_url) as bot:
        return (await bot.send_message(GROUP, text)).message_id


def reply(text: str, preview_id: int, actions: tuple[ReplyAction, ...] = ()) -> OutboundMessage:
    return OutboundMessage(
        id=1,
        platform="telegram",
        chat_id=str(GROUP),
        text=text,
        actions=actions,
        preview_id=str(preview_id),
    )


async def test_the_final_edits_the_preview_into_its_formatted_text_with_its_buttons(
    tg: FakeTelegram, sender: ReplySender
) -> None:
    preview = await preview_in(tg)
    yes = ReplyAction("Yes", "/approve 1")

    sent_as = await sender.send(reply("Once upon a **time**.", preview, actions=(yes,)))

    assert sent_as == str(preview)
    [edit] = tg.edits
    assert (edit.message_id, edit.text) == (preview, "Once upon a time.")
    assert edit.entities is not None
    assert edit.entities[0]["type"] == "bold"
    assert edit.reply_markup is not None  # the buttons of a one-part reply
    assert len(tg.sent) == 1  # only the preview itself


async def test_an_edit_made_before_a_restart_is_not_made_again(
    tg: FakeTelegram, sender: ReplySender
) -> None:
    preview = await preview_in(tg, "The whole answer.")

    sent_as = await sender.send(reply("The whole answer.", preview))

    assert sent_as == str(preview)
    assert tg.calls_to("editMessageText")  # tried: Telegram said "not modified"
    assert (tg.edits, len(tg.sent)) == ([], 1)


async def test_a_long_final_edits_its_first_part_and_sends_the_rest(
    tg: FakeTelegram, sender: ReplySender
) -> None:
    preview = await preview_in(tg)
    text = "\n\n".join(f"Paragraph {n}. " + "words " * 120 for n in range(12))

    await sender.send(reply(text, preview))

    [edit] = tg.edits
    assert edit.message_id == preview
    assert edit.text.startswith("Paragraph 0.")
    rest = tg.sent[1:]
    assert len(rest) >= 1
    assert "Paragraph 11." in rest[-1].text


async def test_a_preview_that_is_gone_is_replaced_by_a_new_message(
    tg: FakeTelegram, sender: ReplySender
) -> None:
    preview = await preview_in(tg)
    async with Bot(tg.token, base_url=tg.base_url) as bot:
        await bot.delete_message(GROUP, preview)

    sent_as = await sender.send(reply("The answer.", preview))

    assert tg.edits == []
    assert [m.text for m in tg.sent[1:]] == ["The answer."]
    assert sent_as == str(tg.sent[-1].message_id)


async def test_a_rate_limited_edit_waits_the_pause_then_edits(
    tg: FakeTelegram, sender: ReplySender
) -> None:
    preview = await preview_in(tg)
    tg.fail("editMessageText", retry_after=1, flood=True)

    await sender.send(reply("The answer.", preview))

    first, second = tg.calls_to("editMessageText")
    assert round(second.at - first.at, 3) >= 1.0  # the pause Telegram named
    assert [e.text for e in tg.edits] == ["The answer."]
    assert len(tg.sent) == 1
