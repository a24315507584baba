"""Buttons under a reply on Telegram, through the real python-telegram-bot and a fake Bot API.

A reply carrying ``actions`` is handed to the running adapter's ``send`` (as push
delivery would hand over a committed reply); a tap on one of its buttons must come back
into the gateway as the command typed by the person who tapped.
"""

from __future__ import annotations

from pathlib import Path

from adapters.base import Adapter
from core.messages import OutboundMessage, ReplyAction
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import DEFAULT_GROUP_ID, DEFAULT_USER, FakeTelegram, make_user
from tests.gateway_server import RunningGateway
from tests.test_telegram_e2e import rows, telegram_gateway

DM = DEFAULT_USER["id"]
APPROVAL = (
    ReplyAction("Approve once", "/approve 12"),
    ReplyAction("Approve for this session", "/approve 12 session"),
    ReplyAction("Deny", "/deny 12"),
)


def adapter(gw: RunningGateway) -> Adapter:
    return gw.gateway.adapters["telegram"]


def reply(chat_id: int, text: str, *actions: ReplyAction) -> OutboundMessage:
    return OutboundMessage(
        id=900_001, platform="telegram", chat_id=str(chat_id), text=text, actions=actions
    )


async def test_a_reply_with_actions_carries_an_inline_keyboard(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai) as gw:
        await adapter(gw).send(reply(DM, "Run `rm -rf build`?", *APPROVAL))
        [sent] = await tg.wait_sent(1)
        await tg.wait_call("getUpdates")

    assert sent.reply_markup == {
        "inline_keyboard": [
            [{"text": "Approve once", "callback_data": "/approve 12"}],
            [{"text": "Approve for this session", "callback_data": "/approve 12 session"}],
            [{"text": "Deny", "callback_data": "/deny 12"}],
        ]
    }
    assert "callback_query" in tg.allowed_updates


async def test_a_tap_is_the_tappers_command_answered_once_and_the_keyboard_removed(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai) as gw:
        await adapter(gw).send(reply(DM, "Need a hand?", ReplyAction("Help", "/help")))
        [offer] = await tg.wait_sent(1)
        tap = tg.push_update(tg.tap(offer.message, "Help"))
        [_, answer] = await tg.wait_sent(2)
        await tg.wait_until(lambda: bool(tg.markup_edits), what="the keyboard removed")
        tg.push_update(tap)  # Telegram hands the same update over again
        await tg.wait_confirmed(tap["update_id"])
        await gw.gateway.core.until_idle(f"telegram:{DM}")

    assert answer.chat_id == DM
    assert "/status" in answer.text  # the gateway answered /help
    assert answer.reply_to_message_id == offer.message_id
    assert [a.callback_query_id for a in tg.callback_answers] == [tap["callback_query"]["id"]]
    assert "Help" in (tg.callback_answers[0].text or "")
    [edit] = tg.markup_edits
    assert (edit.chat_id, edit.message_id, edit.reply_markup) == (DM, offer.message_id, None)
    assert len(tg.sent) == 2  # the redelivered tap made no second answer
    assert fake_openai.requests == []  # a command: the model was not asked
    [taken] = rows(home, "SELECT user_id, chat_id, text FROM inbox")
    assert taken == {"user_id": str(DM), "chat_id": str(DM), "text": "/help"}


async def test_a_strangers_tap_is_refused_and_leaves_the_keyboard(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("telegram:\n  group_policy: allowlist\n", encoding="utf-8")
    env = {"TELEGRAM_ALLOW_ALL_USERS": "", "TELEGRAM_ALLOWED_USERS": "@ada"}
    stranger = make_user(7770009, first_name="Mal", username="mallory")
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai, **env) as gw:
        await adapter(gw).send(
            reply(DEFAULT_GROUP_ID, "Need a hand?", ReplyAction("Help", "/help"))
        )
        [offer] = await tg.wait_sent(1)
        tg.push_update(tg.tap(offer.message, "Help", user=stranger))
        await tg.wait_until(lambda: bool(tg.callback_answers), what="the tap answered")
        tg.push_update(tg.tap(offer.message, "Help"))  # Ada may
        [_, answer] = await tg.wait_sent(2)

    [taken] = rows(home, "SELECT user_id FROM inbox")
    assert taken == {"user_id": str(DM)}  # the stranger's tap was not stored
    refusal = tg.callback_answers[0]
    assert refusal.show_alert
    assert "allowed" in (refusal.text or "")
    assert answer.chat_id == DEFAULT_GROUP_ID
    assert "/status" in answer.text
    assert len(tg.markup_edits) == 1  # only Ada's tap took the keyboard away


async def test_a_long_reply_has_its_keyboard_on_the_last_part(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    text = "\n\n".join(f"Paragraph {n}: " + "words " * 150 for n in range(12))
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai) as gw:
        await adapter(gw).send(reply(DM, text, *APPROVAL))
        await tg.wait_until(lambda: "Paragraph 11" in "".join(m.text for m in tg.sent))
        sent = list(tg.sent)

    assert len(sent) >= 2
    assert [m.reply_markup is not None for m in sent] == [False] * (len(sent) - 1) + [True]


async def test_a_command_too_long_for_callback_data_still_arrives_whole(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    long = "/help " + "x" * 80  # more than Telegram's 64 bytes of callback_data
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai) as gw:
        await adapter(gw).send(reply(DM, "Long one", ReplyAction("Help", long)))
        [offer] = await tg.wait_sent(1)
        tg.push_update(tg.tap(offer.message, "Help"))
        [_, answer] = await tg.wait_sent(2)

    data = (
        offer.reply_markup["inline_keyboard"][0][0]["callback_data"] if offer.reply_markup else ""
    )
    assert len(data.encode()) <= 64
    assert "/status" in answer.text  # /help with its (ignored) arguments answered
