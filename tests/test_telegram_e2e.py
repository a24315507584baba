"""The Telegram adapter end to end: the real python-telegram-bot against a fake Bot API."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from adapters.telegram import send as telegram_send
from core.errors import ConfigError
from core.retry import RetryPolicy
from gateway.config import load_settings
from tests.fakes.loopback import free_port
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import (
    DEFAULT_GROUP_ID,
    DEFAULT_USER,
    FakeTelegram,
    edited,
    group_chat,
    make_user,
)
from tests.gateway_server import RunningGateway, running_gateway

DM = DEFAULT_USER["id"]
SECRET = "s3cret-webhook-token"


@asynccontextmanager
async def telegram_gateway(
    home: Path, tg: FakeTelegram, model: FakeOpenAIServer, **env: str
) -> AsyncIterator[RunningGateway]:
    environment = {**model.gateway_env(), **tg.gateway_env(TELEGRAM_ALLOW_ALL_USERS="true")}
    environment.pop("CHATGATE_TELEGRAM_BASE_FILE_URL")  # derived from the API's base URL
    environment.update(env)
    async with running_gateway(home, environment) as gw:
        yield gw


def rows(home: Path, sql: str) -> list[dict[str, Any]]:
    with sqlite3.connect(home / "state.db") as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql)]


async def test_a_direct_conversation_with_typing_and_the_command_menu(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(tg.private_message("hello there"))
        [reply] = await tg.wait_sent(1)
        tg.push_update(tg.private_message("and again"))
        await tg.wait_sent(2)
        actions = await tg.wait_actions(1)

    assert (reply.chat_id, reply.text) == (DM, "echo: hello there")
    assert tg.sent[1].text == "echo: and again"
    assert actions[0].action == "typing"
    menu = [c["command"] for c in tg.commands]
    assert {"new", "status", "stop", "help"} <= set(menu)
    [session] = rows(home, "SELECT session_key, turn_count FROM sessions")
    assert session == {"session_key": f"telegram:{DM}", "turn_count": 2}


async def test_new_in_a_dm_starts_a_fresh_session(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(tg.private_message("first"))
        await tg.wait_sent(1)
        tg.push_update(tg.command_message("new", chat=None))
        await tg.wait_sent(2)
        tg.push_update(tg.private_message("second"))
        await tg.wait_sent(3)

    ended = rows(home, "SELECT end_reason FROM sessions ORDER BY started_at")
    assert [r["end_reason"] for r in ended] == ["new", None]


async def test_groups_answer_only_when_addressed_and_topics_are_threads(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(tg.group_message("just chatting"))
        tg.push_update(tg.group_message("what time is it?", mention=True))
        [answer] = await tg.wait_sent(1)
        tg.push_update(tg.group_message("thanks", reply_to_bot=True))
        await tg.wait_sent(2)
        forum = group_chat(-1009990001, is_forum=True, title="Forum")
        tg.push_update(tg.topic_message("in the topic", thread_id=77, chat=forum, mention=True))
        topic = (await tg.wait_sent(3))[2]
        tg.push_update(tg.group_reply_with_thread("a reply", mention=True))
        await tg.wait_sent(4)

    assert answer.text.startswith("echo: @chatgate_test_bot what time is it?")
    assert [m.text for m in tg.sent if "just chatting" in m.text] == []
    assert topic.message_thread_id == 77
    keys = {r["session_key"] for r in rows(home, "SELECT session_key FROM sessions")}
    group = str(DEFAULT_GROUP_ID).replace(":", "%3A")
    # The ordinary group's reply thread id did not split the member's session.
    assert f"telegram:{group}:u={DM}" in keys
    assert any(key.endswith(":77") for key in keys)
    assert len(keys) == 2


async def test_a_long_reply_arrives_split_in_order_and_valid(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    parts = []
    for n in range(14):
        parts.append(f"## Part {n}\n\nSee [the docs](https://example.com/{n}) for more.\n")
        parts.append("```python\n" + "\n".join(f"print({n}, {i})" for i in range(40)) + "\n```\n")
        parts.append("Some prose that explains the code above in a few words. " * 4 + "\n")
    reply = "\n".join(parts)
    assert len(reply) > 10_000
    fake_openai.reply_text(reply)
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(tg.private_message("write it all"))
        await tg.wait_until(lambda: len(tg.sent) >= 3 and _quiet(tg))
        sent = list(tg.sent)

    assert len(sent) >= 3
    assert all(len(m.text.encode("utf-16-le")) // 2 <= 4096 for m in sent)
    joined = "".join(m.text for m in sent)
    assert joined.index("Part 0") < joined.index("Part 5") < joined.index("Part 13")
    assert all(m.entities for m in sent)  # formatted, not plain: the fake accepted them


def _quiet(tg: FakeTelegram) -> bool:
    return "Part 13" in "".join(m.text for m in tg.sent)


async def test_rate_limits_are_waited_out_and_a_blocked_user_is_not_retried(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.fail("sendMessage", status=429, retry_after=1)
        started = time.monotonic()
        tg.push_update(tg.private_message("hi"))
        [reply] = await tg.wait_sent(1)
        waited = time.monotonic() - started
        blocked = make_user(7770001, first_name="Bo", username="bo")
        tg.block_chat(blocked["id"])
        tg.push_update(tg.private_message("are you there?", user=blocked))
        await until(lambda: bool(rows(home, "SELECT 1 FROM outbox WHERE status = 'failed'")))

    assert reply.text == "echo: hi"
    assert waited >= 1.0  # the Retry-After was honoured
    [failed] = rows(home, "SELECT chat_id, error FROM outbox WHERE status = 'failed'")
    assert failed["chat_id"] == str(blocked["id"])
    assert "blocked" in failed["error"]


async def test_a_chunk_still_rate_limited_after_its_waits_is_left_to_the_outbox(
    home: Path,
    fake_openai: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # One wait per chunk instead of four, so the test waits one Retry-After, not four.
    monkeypatch.setattr(telegram_send, "RATE_LIMIT_WAITS", RetryPolicy(1, 0.0, 300.0))
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.fail("sendMessage", status=429, retry_after=1, times=2)
        tg.push_update(tg.private_message("hi"))
        [reply] = await tg.wait_sent(1)

    assert reply.text == "echo: hi"
    # Two sends (the second after the named pause), then the outbox's retry: one message.
    assert tg.calls.count("sendMessage") == 3
    handed_over = [r for r in caplog.records if "not sent yet" in r.getMessage()]
    assert len(handed_over) == 1
    [row] = rows(home, "SELECT status FROM outbox")
    assert row["status"] == "delivered"


async def test_updates_queued_while_down_are_answered_once_and_stale_ones_skipped(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg:
        stale = make_user(7770002, first_name="Cy", username="cy")
        tg.push_update(tg.private_message("old news", user=stale, date=int(time.time()) - 7200))
        tg.push_update(tg.private_message("one"))
        tg.push_update(tg.private_message("two"))
        async with telegram_gateway(home, tg, fake_openai):
            await tg.wait_until(lambda: len(tg.sent) >= 3)
        async with telegram_gateway(home, tg, fake_openai):
            tg.push_update(tg.private_message("three"))
            await tg.wait_until(lambda: any(m.text == "echo: three" for m in tg.sent))

    texts = [m.text for m in tg.sent]
    assert texts.count("echo: one") == 1
    assert texts.count("echo: two") == 1
    assert [t for t in texts if "old news" in t] == []
    notices = [m for m in tg.sent if m.chat_id == stale["id"]]
    assert len(notices) == 1
    assert "skipped" in notices[0].text


async def test_someone_not_allowed_gets_one_refusal_and_the_model_nothing(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("telegram:\n  dm_policy: allowlist\n", encoding="utf-8")
    env = {"TELEGRAM_ALLOW_ALL_USERS": "", "TELEGRAM_ALLOWED_USERS": "@friend"}
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai, **env):
        tg.push_update(tg.private_message("let me in"))
        tg.push_update(tg.private_message("please"))
        friend = make_user(7770003, first_name="Fr", username="friend")
        tg.push_update(tg.private_message("hi, it's me", user=friend))
        await tg.wait_until(lambda: any(m.chat_id == friend["id"] for m in tg.sent))

    refusals = [m for m in tg.sent if m.chat_id == DM]
    assert len(refusals) == 1
    assert "allowed" in refusals[0].text
    assert len(fake_openai.requests) == 1  # only the friend's message reached the model


async def test_webhook_mode_checks_the_secret_and_ignores_a_duplicate_update(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    env = {
        "CHATGATE_TELEGRAM_MODE": "webhook",
        "CHATGATE_TELEGRAM_WEBHOOK_URL": "https://bot.example.test/telegram/updates",
        "CHATGATE_TELEGRAM_WEBHOOK_SECRET": SECRET,
    }
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai, **env) as gw:
        assert tg.webhook.url == "https://bot.example.test/telegram/updates"
        assert tg.webhook.secret_token == SECRET
        url = f"{gw.base_url}/telegram/updates"
        bad = await tg.deliver_webhook(tg.private_message("sneaky"), url=url, secret_token="nope")
        update = {**tg.private_message("hello via webhook"), "update_id": 900_001}
        first = await tg.deliver_webhook(update, url=url)
        again = await gw.client.post(  # Telegram redelivers the same update
            "/telegram/updates", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": SECRET}
        )
        await tg.wait_sent(1)
        await gw.gateway.core.until_idle(f"telegram:{DM}")

    assert bad.status_code == 401
    assert (first.status_code, again.status_code) == (200, 200)
    assert [m.text for m in tg.sent] == ["echo: hello via webhook"]
    assert len(fake_openai.requests) == 1


async def until(predicate: Callable[[], bool]) -> None:
    """Wait (bounded) for state the gateway writes to its SessionDB."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)  # noqa: ASYNC110 - polling rows another task writes


async def test_a_second_poller_is_reported_and_retried_not_spun_on(
    home: Path, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    async with FakeTelegram() as tg:
        tg.fail("getUpdates", status=409, times=2)
        tg.push_update(tg.private_message("still there?"))
        async with telegram_gateway(home, tg, fake_openai):
            [reply] = await tg.wait_sent(1)

    assert reply.text == "echo: still there?"
    conflicts = [r for r in caplog.records if "409 Conflict" in r.getMessage()]
    assert len(conflicts) == 2  # each reported once, then retried after a pause
    assert tg.calls.count("getUpdates") >= 3


async def test_a_photo_with_a_caption_reaches_the_turn_as_an_attachment(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(tg.photo_message(b"\x89PNG picture bytes", caption="what is this?"))
        [reply] = await tg.wait_sent(1)

    user_text = fake_openai.requests[0]["messages"][-1]["content"]
    assert user_text.startswith("what is this?")
    assert "image/jpeg" in user_text
    saved = list((home / "cache" / "telegram").iterdir())
    assert [p.read_bytes() for p in saved] == [b"\x89PNG picture bytes"]
    assert reply.text.startswith("echo: what is this?")


async def test_a_transient_send_failure_is_retried_from_the_outbox(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.fail("sendMessage", status=502)
        tg.push_update(tg.private_message("are you up?"))
        [reply] = await tg.wait_sent(1)
        await until(lambda: bool(rows(home, "SELECT 1 FROM outbox WHERE status = 'delivered'")))

    assert reply.text == "echo: are you up?"
    assert tg.calls.count("sendMessage") == 2  # the failed try, then the retry


async def test_commands_addressed_to_the_bot_in_a_group_and_oversized_files(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("telegram:\n  max_file_bytes: 1000\n")
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(tg.command_message("status", chat=group_chat()))
        [status] = await tg.wait_sent(1)
        big = tg.document_message(b"x" * 5000, file_name="big.log", caption="see the log")
        tg.push_update(big)
        [_, reply] = await tg.wait_sent(2)

    assert "Session" in status.text or "session" in status.text
    assert len(fake_openai.requests) == 1  # /status is a command, not a model turn
    sent_text = fake_openai.requests[0]["messages"][-1]["content"]
    assert "big.log was not read" in sent_text
    assert not (home / "cache" / "telegram").exists()
    assert reply.text.startswith("echo: see the log")


async def test_a_command_for_another_bot_in_a_group_is_left_alone(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text("telegram:\n  require_mention: false\n")
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(tg.group_message("/status@some_other_bot"))
        tg.push_update(tg.group_message("/weather@some_other_bot in Paris"))
        tg.push_update(tg.group_message("hello all"))
        [reply] = await tg.wait_sent(1)

    assert reply.text == "echo: hello all"
    assert [m.text for m in tg.sent] == ["echo: hello all"]
    assert len(fake_openai.requests) == 1


async def test_edits_are_ignored_unless_asked_for(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(edited(tg.private_message("typo fixed")))
        tg.push_update(tg.private_message("next"))
        await tg.wait_sent(1)
    assert [m.text for m in tg.sent] == ["echo: next"]

    (home / "config.yaml").write_text("telegram:\n  handle_edits: true\n")
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.push_update(edited(tg.private_message("typo fixed")))
        await tg.wait_sent(1)
    assert [m.text for m in tg.sent] == ["echo: typo fixed"]


async def test_readiness_reports_the_adapter_while_telegram_refuses_polling(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg:
        tg.fail("getUpdates", status=409, times=50)
        async with telegram_gateway(home, tg, fake_openai) as gw:
            await tg.wait_call("getUpdates", 2)
            sick = await gw.client.get("/readyz")
    assert sick.status_code == 503
    assert sick.json() == {"status": "adapter unhealthy", "unhealthy": ["telegram"]}


async def test_a_chunk_whose_formatting_telegram_rejects_is_resent_plain(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.reply_text("Use **bold** and `code`.")
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.fail("sendMessage", status=400, description="Bad Request: can't parse entities")
        tg.push_update(tg.private_message("format it"))
        [reply] = await tg.wait_sent(1)

    assert reply.text == "Use bold and code."
    assert reply.entities is None  # the second try went without entities
    assert tg.calls.count("sendMessage") == 2


async def test_a_reply_to_a_topic_that_vanished_goes_to_the_chat_still_formatted(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.reply_text("Use **bold** here.")
    forum = group_chat(-1009990002, is_forum=True, title="Forum")
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        # Telegram no longer knows the topic: every send into it is "thread not found".
        tg.add_chat({**forum, "is_forum": False})
        tg.push_update(tg.topic_message("are you there?", thread_id=91, chat=forum, mention=True))
        [reply] = await tg.wait_sent(1)

    assert reply.chat_id == forum["id"]
    assert reply.message_thread_id is None  # in the chat itself
    assert reply.text == "Use bold here."
    assert reply.entities  # the formatting was not what Telegram refused
    # Formatted and plain into the topic, then formatted into the chat.
    assert tg.calls.count("sendMessage") == 3


async def test_a_chat_telegram_refuses_is_undeliverable_after_the_fallbacks_sent_once(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    paragraphs = [f"Paragraph **{i}** of a long answer. " + "lorem ipsum " * 30 for i in range(14)]
    fake_openai.reply_text("\n\n".join(paragraphs))  # about 5,500 characters: 2 messages
    forum = group_chat(-1009990003, is_forum=True, title="Forum")
    refusal = "Bad Request: not enough rights to send text messages to the chat"
    # Not streamed: a preview message would take the first of the scripted answers.
    streaming = {"CHATGATE_TELEGRAM__STREAMING": "off"}
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai, **streaming):
        tg.fail("sendMessage", status=400, description=refusal, after=1, times=4)
        tg.push_update(tg.topic_message("tell me", thread_id=77, chat=forum, mention=True))
        await until(lambda: bool(rows(home, "SELECT 1 FROM outbox WHERE status = 'failed'")))
        refused_calls = tg.calls.count("sendMessage")
        tg.push_update(tg.topic_message("and now?", thread_id=77, chat=forum, mention=True))
        await tg.wait_sent(2)

    assert refused_calls == 5  # the first part, then its second four ways
    [failed] = rows(home, "SELECT parts_sent, error FROM outbox WHERE status = 'failed'")
    assert failed["parts_sent"] == 1
    assert "Not enough rights" in failed["error"]
    first, later = tg.sent
    assert "Paragraph 0" in first.text
    assert "Paragraph 13" not in first.text
    # The chat is not written off: the next reply goes to the topic as usual.
    assert "and now?" in later.text
    assert later.message_thread_id == first.message_thread_id == 77
    assert tg.calls.count("sendMessage") == 6  # nothing was sent twice, nor retried


async def test_after_a_failed_send_replies_keep_their_order_and_none_is_sent_twice(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    other = make_user(7770004, first_name="Di", username="di")
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai):
        tg.fail("sendMessage", status=502)
        tg.push_update(tg.private_message("first"))
        await tg.wait_call("sendMessage", 1)
        tg.push_update(tg.private_message("second"))
        tg.push_update(tg.private_message("hello", user=other))
        await tg.wait_sent(3)
        await until(lambda: not rows(home, "SELECT 1 FROM outbox WHERE status = 'pending'"))

    assert [m.text for m in tg.sent_to(DM)] == ["echo: first", "echo: second"]
    assert [m.text for m in tg.sent_to(other["id"])] == ["echo: hello"]
    assert len(tg.sent) == 3


def test_a_webhook_url_that_does_not_reach_the_route_is_refused_at_start(home: Path) -> None:
    env = {
        "TELEGRAM_BOT_TOKEN": "1:x",
        "CHATGATE_TELEGRAM_MODE": "webhook",
        "CHATGATE_TELEGRAM_WEBHOOK_URL": "https://bot.example.test/hook",
        "CHATGATE_TELEGRAM_WEBHOOK_SECRET": SECRET,
    }
    with pytest.raises(ConfigError, match="must end in /telegram/updates"):
        load_settings(home, env)
    del env["CHATGATE_TELEGRAM_WEBHOOK_SECRET"]
    env["CHATGATE_TELEGRAM_WEBHOOK_URL"] = "https://bot.example.test/telegram/updates"
    with pytest.raises(ConfigError, match="webhook_secret"):
        load_settings(home, env)


async def test_the_gateway_starts_while_telegram_is_unreachable(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    port = free_port()  # nothing listens there
    env = {
        **fake_openai.gateway_env(),
        "TELEGRAM_BOT_TOKEN": "123:abc",
        "CHATGATE_TELEGRAM_BASE_URL": f"http://127.0.0.1:{port}/bot",
    }
    async with running_gateway(home, env) as gw:
        answered = await gw.say("the webhook still works")
        ready = await gw.client.get("/readyz")

    assert answered.json()["replies"] == [{"text": "echo: the webhook still works"}]
    assert ready.status_code == 503
    assert ready.json()["unhealthy"] == ["telegram"]


async def test_parts_of_a_long_reply_sent_before_a_restart_are_not_sent_again(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    paragraphs = [f"Part of the answer number {i}. " + "lorem ipsum " * 30 for i in range(30)]
    fake_openai.reply_text("\n\n".join(paragraphs))  # about 12,000 characters: 3 messages
    async with FakeTelegram() as tg:
        async with telegram_gateway(home, tg, fake_openai):
            tg.fail("sendMessage", status=500, after=1, times=1000)  # the 2nd part fails
            tg.push_update(tg.private_message("tell me everything"))
            await tg.wait_call("sendMessage", 2)
            [first] = tg.sent
        [row] = rows(home, "SELECT status, parts_sent FROM outbox")
        tg.clear_failures()
        async with telegram_gateway(home, tg, fake_openai):
            await tg.wait_until(lambda: "number 29" in tg.sent[-1].text)

    assert row == {"status": "pending", "parts_sent": 1}
    texts = [m.text for m in tg.sent]
    assert texts[0] == first.text
    assert len(texts) == 3  # the first part was not sent a second time after the restart
    assert all(f"number {i}." in "".join(texts) for i in range(30))
