"""The fake Telegram Bot API server, driven through python-telegram-bot's real ``Bot``."""

from __future__ import annotations

import asyncio
import datetime as dtm
from collections.abc import AsyncIterator

import httpx
import pytest
import telegram
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from telegram import (
    BotCommand,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    MessageEntity,
    ReplyParameters,
    Update,
)
from telegram.error import (
    BadRequest,
    Conflict,
    EndPointNotFound,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
)
from telegram.ext import ApplicationBuilder, ContextTypes, MessageHandler, filters

from tests.fakes.loopback import LoopbackServer
from tests.fakes.telegram_server import (
    DEFAULT_GROUP_ID,
    DEFAULT_USER,
    FakeTelegram,
    edited,
    entity_for,
    group_chat,
    make_user,
    utf16_len,
)

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


# -- identity and routing -------------------------------------------------------------------


async def test_get_me_describes_the_bot(fake: FakeTelegram, bot: telegram.Bot) -> None:
    me = await bot.get_me()
    assert me.username == "chatgate_test_bot"
    assert me.is_bot
    assert me.id == fake.bot_id == bot.id
    assert fake.calls.count("getMe") >= 1


async def test_unknown_token_is_unauthorized(fake: FakeTelegram) -> None:
    stranger = telegram.Bot("999:nope", base_url=fake.base_url, base_file_url=fake.base_file_url)
    with pytest.raises(InvalidToken):
        await stranger.initialize()


async def test_unknown_method_is_not_found(fake: FakeTelegram, bot: telegram.Bot) -> None:
    with pytest.raises(EndPointNotFound):
        await bot.do_api_request("sendTelepathy", api_kwargs={"chat_id": 1})


async def test_json_bodies_and_case_insensitive_methods(fake: FakeTelegram) -> None:
    url = f"{fake.base_url}{fake.token}/SENDMESSAGE"
    async with httpx.AsyncClient() as client:
        answer = await client.post(url, json={"chat_id": USER_ID, "text": "123"})
    body = answer.json()
    assert body["ok"] is True
    assert body["result"]["text"] == "123"
    assert fake.sent[0].text == "123"  # a numeric-looking text stays a string
    assert fake.calls == ["sendMessage"]


# -- getUpdates -------------------------------------------------------------------------------


async def test_offset_confirms_updates_for_good(fake: FakeTelegram, bot: telegram.Bot) -> None:
    first, second, third = fake.push_updates(
        fake.private_message(text) for text in ("one", "two", "three")
    )
    everything = await bot.get_updates()
    assert [u.update_id for u in everything] == [
        first["update_id"],
        second["update_id"],
        third["update_id"],
    ]
    assert everything[0].message is not None
    assert everything[0].message.text == "one"

    again = await bot.get_updates()  # nothing confirmed yet: redelivered
    assert len(again) == 3

    rest = await bot.get_updates(offset=second["update_id"] + 1)
    assert [u.update_id for u in rest] == [third["update_id"]]
    assert [u.update_id for u in await bot.get_updates()] == [third["update_id"]]
    assert [u.update_id for u in await bot.get_updates(offset=1)] == [third["update_id"]]
    await fake.wait_confirmed(second["update_id"], timeout=1)
    assert fake.confirmed_offset == second["update_id"] + 1


async def test_limit_and_negative_offset(fake: FakeTelegram, bot: telegram.Bot) -> None:
    pushed = fake.push_updates(fake.private_message(str(n)) for n in range(5))
    assert [u.update_id for u in await bot.get_updates(limit=2)] == [
        pushed[0]["update_id"],
        pushed[1]["update_id"],
    ]
    last = await bot.get_updates(offset=-1)
    assert [u.update_id for u in last] == [pushed[-1]["update_id"]]
    assert len(await bot.get_updates()) == 1


async def test_long_poll_returns_when_an_update_arrives(
    fake: FakeTelegram, bot: telegram.Bot
) -> None:
    poll = asyncio.create_task(bot.get_updates(timeout=30))
    await fake.wait_call("getUpdates")
    assert not poll.done()
    pushed = fake.push_update(fake.private_message("wake up"))
    async with asyncio.timeout(5):  # far below the 30 s long-poll timeout
        updates = await poll
    assert [u.update_id for u in updates] == [pushed["update_id"]]


async def test_long_poll_times_out_empty(fake: FakeTelegram, bot: telegram.Bot) -> None:
    assert await bot.get_updates(timeout=1) == ()


async def test_a_newer_poll_ends_the_older_one_with_conflict(
    fake: FakeTelegram, bot: telegram.Bot
) -> None:
    # PTB serialises getUpdates per Bot, so the second poller is a second instance,
    # as when two gateways run on one token.
    other = telegram.Bot(fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url)
    async with other:
        older = asyncio.create_task(bot.get_updates(timeout=30))
        await fake.wait_call("getUpdates")
        newer = asyncio.create_task(other.get_updates(timeout=30))
        with pytest.raises(Conflict, match="(?i)terminated by other getUpdates request"):
            async with asyncio.timeout(5):
                await older
        fake.push_update(fake.private_message("for the newer poll"))
        async with asyncio.timeout(5):
            assert len(await newer) == 1


async def test_allowed_updates_filters_types(fake: FakeTelegram, bot: telegram.Bot) -> None:
    plain = fake.push_update(fake.private_message("hi"))
    fake.push_update(edited(plain))
    updates = await bot.get_updates(allowed_updates=["message"])
    assert [u.update_id for u in updates] == [plain["update_id"]]
    assert fake.allowed_updates == ["message"]


async def test_ptb_application_polls_and_confirms_on_stop(fake: FakeTelegram) -> None:
    async def echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.effective_message is not None
        text = f"echo: {update.effective_message.text}"
        await update.effective_message.reply_text(text, do_quote=True)

    app = (
        ApplicationBuilder()
        .token(fake.token)
        .base_url(fake.base_url)
        .base_file_url(fake.base_file_url)
        .build()
    )
    app.add_handler(MessageHandler(filters.TEXT, echo))
    first = fake.push_update(fake.private_message("queued before start"))
    async with app:
        assert app.updater is not None
        await app.start()
        await app.updater.start_polling(timeout=30)
        second = fake.push_update(fake.private_message("while polling"))
        sent = await fake.wait_sent(2)
        await app.updater.stop()
        await app.stop()
    assert [m.text for m in sent] == ["echo: queued before start", "echo: while polling"]
    assert sent[0].reply_to_message_id == first["message"]["message_id"]
    assert fake.webhook.delete_count == 1  # start_polling clears any webhook first
    await fake.wait_confirmed(second["update_id"], timeout=5)
    assert fake.pending == []


# -- webhook ----------------------------------------------------------------------------------


async def test_webhook_blocks_get_updates_until_deleted(
    fake: FakeTelegram, bot: telegram.Bot
) -> None:
    fake.push_update(fake.private_message("queued"))
    assert await bot.set_webhook(
        "https://example.invalid/telegram/hook",
        secret_token="s3cret-token",
        allowed_updates=["message", "edited_message"],
    )
    assert fake.webhook.url == "https://example.invalid/telegram/hook"
    assert fake.webhook.secret_token == "s3cret-token"
    assert fake.webhook.allowed_updates == ["message", "edited_message"]
    info = await bot.get_webhook_info()
    assert info.url == fake.webhook.url
    assert info.pending_update_count == 1

    with pytest.raises(Conflict, match="(?i)webhook is active"):
        await bot.get_updates()

    assert await bot.delete_webhook(drop_pending_updates=True)
    assert fake.webhook.url == ""
    assert await bot.get_updates() == ()


async def test_set_webhook_can_drop_pending(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_update(fake.private_message("old"))
    await bot.set_webhook("https://example.invalid/hook", drop_pending_updates=True)
    assert fake.webhook.drop_pending_updates
    assert fake.pending == []


async def test_deliver_webhook_posts_with_the_secret(fake: FakeTelegram, bot: telegram.Bot) -> None:
    received: list[tuple[str | None, int]] = []

    async def hook(request: Request) -> Response:
        body = await request.json()
        received.append((request.headers.get("x-telegram-bot-api-secret-token"), body["update_id"]))
        return JSONResponse({})

    receiver = LoopbackServer(Starlette(routes=[Route("/hook", hook, methods=["POST"])]))
    await receiver.start()
    try:
        await bot.set_webhook(f"{receiver.url}/hook", secret_token="right")
        good = await fake.deliver_webhook(fake.private_message("via webhook"))
        bad = await fake.deliver_webhook(fake.private_message("forged"), secret_token="wrong")
        await fake.deliver_webhook(fake.private_message("bare"), omit_secret=True)
    finally:
        await receiver.stop()
    assert good.status_code == bad.status_code == 200
    assert [secret for secret, _ in received] == ["right", "wrong", None]
    assert received[0][1] < received[1][1] < received[2][1]
    assert fake.pending == []  # webhook deliveries are not queued for getUpdates


# -- sendMessage and friends ------------------------------------------------------------------


async def test_send_message_with_entities_round_trips(
    fake: FakeTelegram, bot: telegram.Bot
) -> None:
    text = "Hi 👋 see bold and code"
    bold = entity_for(text, "bold", "bold")
    code = entity_for(text, "code", "code")
    assert bold["offset"] == 10  # the emoji counts two UTF-16 code units
    sent = await bot.send_message(
        USER_ID,
        text,
        entities=[MessageEntity.de_json(bold, bot), MessageEntity.de_json(code, bot)],
        disable_notification=True,
    )
    assert sent.text == text
    assert sent.chat.id == USER_ID
    assert sent.from_user is not None
    assert sent.from_user.id == fake.bot_id
    assert sent.parse_entity(sent.entities[0]) == "bold"

    [record] = await fake.wait_sent(1, timeout=1)
    assert record.chat_id == USER_ID
    assert record.message_id == sent.message_id
    assert record.text == text
    assert record.entities == [bold, code]
    assert record.disable_notification
    assert record.message_thread_id is None
    assert fake.sent_to(USER_ID) == [record]


async def test_replies_and_topics(fake: FakeTelegram, bot: telegram.Bot) -> None:
    incoming = fake.push_update(fake.topic_message("in topic", thread_id=42))["message"]
    forum = incoming["chat"]["id"]
    sent = await bot.send_message(
        forum,
        "answer",
        message_thread_id=42,
        reply_parameters=ReplyParameters(incoming["message_id"]),
    )
    assert sent.message_thread_id == 42
    assert sent.reply_to_message is not None
    assert sent.reply_to_message.message_id == incoming["message_id"]
    record = fake.sent[-1]
    assert (record.message_thread_id, record.reply_to_message_id) == (42, incoming["message_id"])

    with pytest.raises(BadRequest, match="(?i)message to be replied not found"):
        await bot.send_message(forum, "x", reply_parameters=ReplyParameters(999_999))


async def test_thread_id_outside_a_forum_is_rejected(fake: FakeTelegram, bot: telegram.Bot) -> None:
    stray = fake.push_update(fake.group_reply_with_thread("hey", mention=True))["message"]
    assert stray["message_thread_id"] == stray["reply_to_message"]["message_id"]
    assert "is_topic_message" not in stray
    with pytest.raises(BadRequest, match="(?i)message thread not found"):
        await bot.send_message(DEFAULT_GROUP_ID, "x", message_thread_id=stray["message_thread_id"])
    assert fake.sent == []


async def test_text_validation(fake: FakeTelegram, bot: telegram.Bot) -> None:
    await bot.send_message(USER_ID, "😀" * 2048)  # exactly 4096 UTF-16 code units
    with pytest.raises(BadRequest, match="(?i)message is too long"):
        await bot.send_message(USER_ID, "😀" * 2049)
    with pytest.raises(BadRequest, match="(?i)message is too long"):
        await bot.send_message(USER_ID, "x" * 4097)
    with pytest.raises(BadRequest, match="(?i)message text is empty"):
        await bot.send_message(USER_ID, "   ")
    assert len(fake.sent) == 1


@pytest.mark.parametrize(
    "bad",
    [
        MessageEntity("bold", 3, 5),  # runs past "hello" (5 units)
        MessageEntity("bold", 5, 1),  # starts at the end
        MessageEntity("bold", 0, 0),  # empty
        MessageEntity("text_link", 0, 2),  # no url
    ],
)
async def test_bad_entities_are_rejected(bot: telegram.Bot, bad: MessageEntity) -> None:
    with pytest.raises(BadRequest, match="(?i)can't parse entities"):
        await bot.send_message(USER_ID, "hello", entities=[bad])


async def test_entities_count_utf16_units(bot: telegram.Bot) -> None:
    await bot.send_message(USER_ID, "a😀", entities=[MessageEntity("bold", 1, 2)])
    assert utf16_len("a😀") == 3
    with pytest.raises(BadRequest, match="(?i)can't parse entities"):
        await bot.send_message(USER_ID, "a😀", entities=[MessageEntity("bold", 1, 3)])


async def test_markdown_v2_reserved_characters(fake: FakeTelegram, bot: telegram.Bot) -> None:
    with pytest.raises(BadRequest, match=r"(?i)Character '\.' is reserved"):
        await bot.send_message(USER_ID, "*Done*.", parse_mode="MarkdownV2")
    with pytest.raises(BadRequest, match="(?i)Character '-' is reserved"):
        await bot.send_message(USER_ID, "a - b", parse_mode="MarkdownV2")
    await bot.send_message(
        USER_ID, "*Done*\\. `x.y-z` [link](http://a.b/c)", parse_mode="MarkdownV2"
    )
    assert fake.sent[-1].parse_mode == "MarkdownV2"


async def test_edit_message_text(fake: FakeTelegram, bot: telegram.Bot) -> None:
    sent = await bot.send_message(USER_ID, "draft")
    changed = await bot.edit_message_text("final", chat_id=USER_ID, message_id=sent.message_id)
    assert isinstance(changed, telegram.Message)
    assert changed.text == "final"
    [edit] = await fake.wait_edits(1, timeout=1)
    assert (edit.chat_id, edit.message_id, edit.text) == (USER_ID, sent.message_id, "final")
    with pytest.raises(BadRequest, match="(?i)message is not modified"):
        await bot.edit_message_text("final", chat_id=USER_ID, message_id=sent.message_id)
    with pytest.raises(BadRequest, match="(?i)message to edit not found"):
        await bot.edit_message_text("x", chat_id=USER_ID, message_id=424242)


async def test_chat_actions_are_recorded(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.push_update(fake.topic_message("hi", thread_id=7))
    await bot.send_chat_action(USER_ID, "typing")
    await bot.send_chat_action(DEFAULT_GROUP_ID, "typing", message_thread_id=7)
    actions = await fake.wait_actions(2, timeout=1)
    assert [(a.chat_id, a.action, a.message_thread_id) for a in actions] == [
        (USER_ID, "typing", None),
        (DEFAULT_GROUP_ID, "typing", 7),
    ]


async def test_commands_are_stored(fake: FakeTelegram, bot: telegram.Bot) -> None:
    commands = [BotCommand("new", "Start a new session"), BotCommand("help", "Show help")]
    assert await bot.set_my_commands(commands)
    assert fake.commands == [
        {"command": "new", "description": "Start a new session"},
        {"command": "help", "description": "Show help"},
    ]
    assert [c.command for c in await bot.get_my_commands()] == ["new", "help"]
    with pytest.raises(BadRequest):
        await bot.set_my_commands([BotCommand("Bad-Name", "nope")])
    assert await bot.delete_my_commands()
    assert fake.commands == []


# -- files ------------------------------------------------------------------------------------


async def test_photo_download(fake: FakeTelegram, bot: telegram.Bot) -> None:
    data = b"\x89PNG" + bytes(range(256)) * 4
    update = Update.de_json(fake.push_update(fake.photo_message(data, caption="look")), bot)
    assert update.message is not None
    assert update.message.caption == "look"
    largest = update.message.photo[-1]
    file = await largest.get_file()
    assert file.file_size == len(data)
    assert bytes(await file.download_as_bytearray()) == data
    assert fake.calls[-1] == "getFile"


async def test_document_download_and_size_limit(fake: FakeTelegram, bot: telegram.Bot) -> None:
    update = Update.de_json(
        fake.push_update(fake.document_message(b"report", file_name="r.txt")), bot
    )
    assert update.message is not None
    assert update.message.document is not None
    assert update.message.document.file_name == "r.txt"
    file = await bot.get_file(update.message.document.file_id)
    assert bytes(await file.download_as_bytearray()) == b"report"

    huge = Update.de_json(
        fake.push_update(fake.document_message(b"x", declared_size=30 * 1024 * 1024)), bot
    )
    assert huge.message is not None
    assert huge.message.document is not None
    assert huge.message.document.file_size == 30 * 1024 * 1024
    with pytest.raises(BadRequest, match="(?i)file is too big"):
        await bot.get_file(huge.message.document.file_id)
    with pytest.raises(BadRequest, match="(?i)invalid file_id"):
        await bot.get_file("no-such-file")


# -- injected failures ------------------------------------------------------------------------


async def test_429_surfaces_as_retry_after(
    fake: FakeTelegram, bot: telegram.Bot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")  # retry_after as a timedelta, no warning
    fake.fail("sendMessage", status=429, retry_after=7)
    with pytest.raises(RetryAfter) as caught:
        await bot.send_message(USER_ID, "flood")
    assert caught.value.retry_after == dtm.timedelta(seconds=7)
    assert fake.pending_failures == 0
    await bot.send_message(USER_ID, "later")  # consumed: the next call succeeds
    assert [m.text for m in fake.sent] == ["later"]
    assert fake.calls.count("sendMessage") == 2


async def test_409_surfaces_as_conflict(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.fail("getUpdates", status=409)
    with pytest.raises(Conflict, match="(?i)only one bot instance"):
        await bot.get_updates()
    assert await bot.get_updates() == ()


async def test_blocked_chat_is_forbidden(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.block_chat(USER_ID)
    with pytest.raises(Forbidden, match="(?i)blocked by the user"):
        await bot.send_message(USER_ID, "anyone there?")
    with pytest.raises(Forbidden):
        await bot.send_chat_action(USER_ID, "typing")
    with pytest.raises(Forbidden):
        await bot.send_message(USER_ID, "still blocked")
    await bot.send_message(USER_ID + 1, "someone else")
    assert [m.chat_id for m in fake.sent] == [USER_ID + 1]


async def test_transient_errors_in_order(fake: FakeTelegram, bot: telegram.Bot) -> None:
    fake.fail("sendMessage", status=502)
    fake.fail("sendMessage", status=500)
    for expected in ("Bad Gateway", "Internal Server Error"):
        with pytest.raises(NetworkError, match=expected) as caught:
            await bot.send_message(USER_ID, "retry me")
        assert not isinstance(caught.value, BadRequest)
    await bot.send_message(USER_ID, "retry me")
    assert len(fake.sent) == 1


# -- builders, parsed by PTB --------------------------------------------------------------------


async def test_builders_parse_as_ptb_updates(fake: FakeTelegram, bot: telegram.Bot) -> None:
    bob = make_user(7, first_name="Bob", username="bob")
    dm = Update.de_json(fake.push_update(fake.private_message("hi", user=bob)), bot)
    assert dm.effective_chat is not None
    assert dm.effective_chat.type == "private"
    assert dm.effective_user is not None
    assert dm.effective_user.username == "bob"

    mention = Update.de_json(fake.push_update(fake.group_message("ping", mention=True)), bot)
    assert mention.message is not None
    assert mention.message.text == "@chatgate_test_bot ping"
    assert mention.message.parse_entities(["mention"]) == {
        mention.message.entities[0]: "@chatgate_test_bot"
    }

    reply = Update.de_json(fake.push_update(fake.group_message("reply", reply_to_bot=True)), bot)
    assert reply.message is not None
    assert reply.message.reply_to_message is not None
    assert reply.message.reply_to_message.from_user is not None
    assert reply.message.reply_to_message.from_user.id == fake.bot_id

    small = group_chat(-4242, supergroup=False)
    plain = Update.de_json(fake.push_update(fake.group_message("no mention", chat=small)), bot)
    assert plain.message is not None
    assert plain.message.chat.type == "group"
    assert not plain.message.entities


async def test_topic_command_edit_and_date_builders(fake: FakeTelegram, bot: telegram.Bot) -> None:
    topic = Update.de_json(fake.push_update(fake.topic_message("hi", thread_id=9)), bot)
    assert topic.message is not None
    assert topic.message.is_topic_message
    assert topic.message.message_thread_id == 9
    assert topic.message.chat.is_forum

    command = Update.de_json(fake.push_update(fake.command_message("new", "fresh start")), bot)
    assert command.message is not None
    assert command.message.text == "/new@chatgate_test_bot fresh start"
    assert command.message.parse_entities(["bot_command"]) == {
        command.message.entities[0]: "/new@chatgate_test_bot"
    }

    original = fake.private_message("typo")
    change = Update.de_json(fake.push_update(edited(original)), bot)
    assert change.edited_message is not None
    assert change.message is None
    assert change.edited_message.edit_date is not None

    when = dtm.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dtm.UTC)
    old = Update.de_json(fake.push_update(fake.private_message("from the backlog", date=when)), bot)
    assert old.message is not None
    assert old.message.date == when


async def test_explicit_and_duplicate_update_ids(fake: FakeTelegram, bot: telegram.Bot) -> None:
    first = fake.push_update({"update_id": 500, **fake.private_message("a")})
    again = fake.push_update(first)
    following = fake.push_update(fake.private_message("b"))
    assert again["update_id"] == 500
    assert following["update_id"] > 500
    ids = [u.update_id for u in await bot.get_updates()]
    assert ids == [500, 500, following["update_id"]]


# -- inline keyboards and taps ----------------------------------------------------------------


async def test_a_keyboard_is_kept_on_the_message_and_a_tap_answered_once(
    fake: FakeTelegram, bot: telegram.Bot
) -> None:
    keyboard = InlineKeyboardMarkup([[InlineKeyboardButton("Yes", callback_data="/yes")]])
    sent = await bot.send_message(USER_ID, "Sure?", reply_markup=keyboard)
    assert sent.reply_markup == keyboard
    fake.push_update(fake.tap(fake.sent[0].message, "Yes"))
    [update] = await bot.get_updates()
    query = update.callback_query
    assert query is not None
    assert (query.data, query.from_user.id) == ("/yes", USER_ID)
    assert await query.answer("ok")
    with pytest.raises(BadRequest, match="(?i)query is too old"):
        await query.answer("again")
    edited_message = await bot.edit_message_reply_markup(USER_ID, sent.message_id)
    assert isinstance(edited_message, telegram.Message)
    assert edited_message.reply_markup is None
    with pytest.raises(BadRequest, match="(?i)not modified"):
        await bot.edit_message_reply_markup(USER_ID, sent.message_id)
    assert [a.text for a in fake.callback_answers] == ["ok"]
    assert [e.reply_markup for e in fake.markup_edits] == [None]


async def test_callback_data_over_64_bytes_is_refused(bot: telegram.Bot) -> None:
    keyboard = InlineKeyboardMarkup([[InlineKeyboardButton("Long", callback_data="x" * 65)]])
    with pytest.raises(BadRequest, match="(?i)button_data_invalid"):
        await bot.send_message(USER_ID, "Sure?", reply_markup=keyboard)
