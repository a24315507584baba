"""Replies that stream on Telegram, end to end: the real gateway and python-telegram-bot
against the fake Bot API, the fake model streaming a few tokens a second.

Pacing is checked on the times the fake Telegram received each call, never on the
test's own clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import pytest

from core.errors import ConfigError
from gateway.config import load_settings
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import (
    DEFAULT_GROUP_ID,
    DEFAULT_USER,
    FakeTelegram,
    Json,
    group_chat,
)
from tests.test_telegram_e2e import rows, telegram_gateway, until

DM = DEFAULT_USER["id"]
GROUP = DEFAULT_GROUP_ID
TOKEN_SECONDS = 0.1  # the fake model streams 10 tokens a second
ANSWER = " ".join(f"word{n}" for n in range(30))  # 3 s of streaming
LONG_ANSWER = " ".join(f"word{n}" for n in range(60))  # 6 s: on well past a 2 s pause


def paced(times: Sequence[float]) -> bool:
    """At most one update a second: each at least a second after the one before."""
    return all(round(later - earlier, 3) >= 1.0 for earlier, later in pairwise(times))


def growing(texts: Sequence[str]) -> bool:
    return all(
        later.startswith(earlier) and len(later) > len(earlier)
        for earlier, later in pairwise(texts)
    )


def delivered(home: Path) -> bool:
    outbox = rows(home, "SELECT status FROM outbox")
    return bool(outbox) and all(r["status"] == "delivered" for r in outbox)


def texts_in(tg: FakeTelegram) -> list[str]:
    """What the bot's messages read, message after message and edit after edit."""
    return [*(m.text for m in tg.sent), *(e.text for e in tg.edits)]


def shown(tg: FakeTelegram, chat_id: int, message_id: int) -> str:
    """The text a message in the fake's chat reads now."""
    message: Json = tg.messages[(chat_id, message_id)]
    return str(message["text"])


async def test_a_streamed_dm_shows_growing_drafts_then_one_final_message(home: Path) -> None:
    async with (
        FakeOpenAIServer(token_seconds=TOKEN_SECONDS) as model,
        FakeTelegram() as tg,
        telegram_gateway(home, tg, model),
    ):
        model.reply_text(ANSWER)
        tg.push_update(tg.private_message("tell me a story"))
        [final] = await tg.wait_sent(1)
        await until(lambda: delivered(home))

    drafts = tg.drafts_to(DM)
    assert len(drafts) >= 2  # the answer was seen growing before it was sent
    assert growing([d.text for d in drafts])
    assert ANSWER.startswith(drafts[-1].text)
    assert paced([d.at for d in drafts])
    assert len({d.draft_id for d in drafts}) == 1
    assert drafts[0].draft_id != 0
    assert (final.chat_id, final.text) == (DM, ANSWER)
    assert tg.sent == [final]  # one final, sent as a message of its own
    assert tg.edits == []
    assert tg.deletions == []


async def test_a_streamed_group_reply_is_one_message_sent_then_edited_into_the_final(
    home: Path,
) -> None:
    async with (
        FakeOpenAIServer(token_seconds=TOKEN_SECONDS) as model,
        FakeTelegram() as tg,
        telegram_gateway(home, tg, model),
    ):
        model.reply_text(ANSWER)
        asked = tg.group_message("tell me a story", mention=True)
        tg.push_update(asked)
        [preview] = await tg.wait_sent(1)
        await until(lambda: delivered(home))

    updates = [c for c in tg.requests if c.method in ("sendMessage", "editMessageText")]
    assert tg.sent == [preview]  # nothing sent but the one message
    assert preview.chat_id == GROUP
    assert preview.reply_to_message_id == asked["message"]["message_id"]
    assert ANSWER.startswith(preview.text)
    assert len(tg.edits) >= 2
    assert {e.message_id for e in tg.edits} == {preview.message_id}
    assert growing([preview.text, *(e.text for e in tg.edits)])
    assert paced([u.at for u in updates[:-1]])  # every preview update; the last is the final
    assert shown(tg, GROUP, preview.message_id) == ANSWER
    [item] = rows(home, "SELECT preview_id FROM inbox")
    assert item["preview_id"] == str(preview.message_id)
    assert (tg.drafts, tg.deletions) == ([], [])


async def test_a_429_mid_stream_is_waited_out_and_the_final_arrives_once(home: Path) -> None:
    async with (
        FakeOpenAIServer(token_seconds=TOKEN_SECONDS) as model,
        FakeTelegram() as tg,
        telegram_gateway(home, tg, model),
    ):
        model.reply_text(LONG_ANSWER)
        # The second draft is refused for 2 s, and so is everything else in the chat.
        tg.fail("sendMessageDraft", retry_after=2, after=1, flood=True)
        tg.push_update(tg.private_message("tell me a story"))
        await tg.wait_sent(1)
        await until(lambda: delivered(home))

    attempts = tg.calls_to("sendMessageDraft")
    refused = attempts[1].at
    assert [c for c in attempts if refused < c.at < refused + 2] == []  # the pause honoured
    assert len(attempts) >= 3  # and the preview went on after it
    assert len(tg.drafts_to(DM)) == len(attempts) - 1
    assert [m.text for m in tg.sent] == [LONG_ANSWER]
    assert tg.pending_failures == 0


async def test_a_429_on_a_group_edit_holds_the_preview_and_the_final_still_edits_once(
    home: Path,
) -> None:
    async with (
        FakeOpenAIServer(token_seconds=TOKEN_SECONDS) as model,
        FakeTelegram() as tg,
        telegram_gateway(home, tg, model),
    ):
        model.reply_text(LONG_ANSWER)
        tg.fail("editMessageText", retry_after=2, flood=True)
        tg.push_update(tg.group_message("tell me a story", mention=True))
        [preview] = await tg.wait_sent(1)
        await until(lambda: delivered(home))

    edits = tg.calls_to("editMessageText")
    refused = edits[0].at
    held = [c.params["text"] for c in edits if refused < c.at < refused + 2]
    assert set(held) <= {LONG_ANSWER}  # no preview update in the pause; the final may try once
    assert len(held) <= 1
    assert len(edits) >= 3  # the preview went on after the pause
    assert tg.sent == [preview]
    assert shown(tg, GROUP, preview.message_id) == LONG_ANSWER


async def test_a_tool_call_mid_stream_shows_its_line_in_the_same_bubble(home: Path) -> None:
    release = asyncio.Event()
    async with (
        FakeOpenAIServer(token_seconds=TOKEN_SECONDS) as model,
        FakeTelegram() as tg,
        telegram_gateway(home, tg, model),
    ):
        model.reply_tool_call("session_search", {"query": "lunch"}, text="Let me look that up.")
        model.block(release)  # the answer waits until the tool's line has been seen
        model.reply_text(ANSWER)
        tg.push_update(tg.group_message("what did we say about lunch?", mention=True))
        [bubble] = await tg.wait_sent(1)
        await tg.wait_until(
            lambda: any("searching past sessions…" in t for t in texts_in(tg)), what="tool line"
        )
        release.set()
        await until(lambda: delivered(home))

    texts = texts_in(tg)
    line = next(t for t in texts if "searching past sessions…" in t)
    assert line == "Let me look that up.\n\nsearching past sessions…"
    after = texts[texts.index(line) + 1 :]
    assert any(t.startswith("Let me look that up.\n\nword0") for t in after)  # same bubble
    assert tg.sent == [bubble]  # one message for the whole turn
    assert {e.message_id for e in tg.edits} == {bubble.message_id}
    assert shown(tg, GROUP, bubble.message_id) == ANSWER
    tools = rows(home, "SELECT tool_name FROM messages WHERE tool_name IS NOT NULL")
    assert tools == [{"tool_name": "session_search"}]


@pytest.mark.parametrize(
    "setting",
    [{"CHATGATE_STREAMING__ENABLED": "false"}, {"CHATGATE_TELEGRAM__STREAMING": "off"}],
    ids=["globally off", "telegram off"],
)
async def test_streaming_off_sends_each_reply_whole(home: Path, setting: dict[str, str]) -> None:
    async with (
        FakeOpenAIServer(token_seconds=TOKEN_SECONDS) as model,
        FakeTelegram() as tg,
        telegram_gateway(home, tg, model, **setting),
    ):
        model.reply_text(ANSWER)
        model.reply_text(ANSWER)
        tg.push_update(tg.private_message("tell me a story"))
        tg.push_update(tg.group_message("tell me a story", mention=True))
        await tg.wait_sent(2)
        await until(lambda: delivered(home))

    assert sorted((m.chat_id, m.text) for m in tg.sent) == [(GROUP, ANSWER), (DM, ANSWER)]
    assert (tg.drafts, tg.edits) == ([], [])


def test_the_streaming_settings_are_checked(home: Path) -> None:
    token = {"TELEGRAM_BOT_TOKEN": "1:x"}
    with pytest.raises(ConfigError, match="telegram.streaming"):
        load_settings(home, {**token, "CHATGATE_TELEGRAM__STREAMING": "sometimes"})
    for bad in ("0", "-1", "31", "fast"):
        with pytest.raises(ConfigError, match="telegram.stream_updates_per_second"):
            load_settings(home, {**token, "CHATGATE_TELEGRAM__STREAM_UPDATES_PER_SECOND": bad})
    (home / "config.yaml").write_text("telegram:\n  streaming: off\n")  # YAML reads a boolean
    assert load_settings(home, token).platform("telegram").streaming == "off"  # type: ignore[attr-defined]


async def test_stop_mid_stream_takes_the_group_preview_away(home: Path) -> None:
    async with (
        FakeOpenAIServer(token_seconds=TOKEN_SECONDS) as model,
        FakeTelegram() as tg,
        telegram_gateway(home, tg, model),
    ):
        model.reply_text(LONG_ANSWER)
        tg.push_update(tg.group_message("tell me a story", mention=True))
        [preview] = await tg.wait_sent(1)
        tg.push_update(tg.command_message("stop", chat=group_chat()))
        await tg.wait_until(lambda: len(tg.deletions) == 1, what="the preview deleted")
        await tg.wait_sent(2)
        await until(lambda: delivered(home))

    assert [(d.chat_id, d.message_id) for d in tg.deletions] == [(GROUP, preview.message_id)]
    assert [m.text for m in tg.sent[1:]] == ["Stopped."]
    assert all(e.text != LONG_ANSWER for e in tg.edits)
