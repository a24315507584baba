"""Replies that stream on Discord, end to end: the real discord.py against the fake
Discord, the fake model streaming slowly. A reply is one message, sent then edited at
most once a second, and the final reply is an edit of it; timing is read from the
fake's recorded times, never the wall clock."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import signal
import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from core.errors import ConfigError
from core.messages import OutboundMessage, ReplyAction
from core.models.base import ToolSpec
from core.tools import Tool, ToolContext
from gateway.config import load_settings
from tests.fakes.discord_rest import SentMessage
from tests.fakes.discord_server import BOT_USER, GENERAL_ID, FakeDiscord
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway
from tests.test_cli import client_for, gateway_process, wait_ready

Json = dict[str, Any]
# Sixty words, each a delta; at 40 ms a word the answer takes over two seconds.
ANSWER = " ".join(f"word{i}" for i in range(60)) + "."
TOKEN_SECONDS = 0.04
# The fake records arrival times; two updates the pacer sent a second apart can arrive
# a little closer than that.
PACED = 0.95


class SlowTool:
    """A tool that returns only when the test lets it (``release``)."""

    name = "lookup_notes"

    def __init__(self) -> None:
        self.release = asyncio.Event()

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description="Look up notes.", parameters={})

    async def call(self, args: Json, ctx: ToolContext) -> str:
        await self.release.wait()
        return json.dumps({"notes": "likes green tea"})


@asynccontextmanager
async def gateway(
    home: Path,
    dc: FakeDiscord,
    model: FakeOpenAIServer,
    *,
    tools: Sequence[Tool] = (),
    env: dict[str, str] | None = None,
) -> AsyncIterator[RunningGateway]:
    environment = {**model.gateway_env(), **dc.gateway_env(DISCORD_ALLOW_ALL_USERS="true")}
    environment.update(env or {})
    readies = dc.ready_count
    async with running_gateway(home, environment, tools=tools) as gw:
        await dc.wait_ready(readies + 1)
        yield gw


def rows(home: Path, sql: str) -> list[dict[str, Any]]:
    with sqlite3.connect(home / "state.db") as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql)]


async def delivered(home: Path, count: int = 1) -> None:
    """Wait (bounded) until ``count`` replies are delivered: no event announces it."""
    deadline = time.monotonic() + 15
    sql = "SELECT id FROM outbox WHERE status = 'delivered'"
    while len(rows(home, sql)) < count:
        assert time.monotonic() < deadline, "the reply was not delivered in time"
        await asyncio.sleep(0.01)  # noqa: ASYNC110 - polling another component's store


def bot_messages(dc: FakeDiscord, channel_id: str) -> list[Json]:
    """What the channel shows from the bot now."""
    return [m for m in dc.history(channel_id) if m["author"]["id"] == BOT_USER["id"]]


def gaps(records: Sequence[SentMessage]) -> list[float]:
    return [later.at - earlier.at for earlier, later in zip(records, records[1:], strict=False)]


@pytest.mark.parametrize("where", ["guild", "dm"])
async def test_a_streamed_reply_is_one_message_edited_at_most_once_a_second(
    home: Path, fake_openai: FakeOpenAIServer, where: str
) -> None:
    fake_openai.token_seconds = TOKEN_SECONDS
    fake_openai.reply_text(ANSWER)
    async with FakeDiscord() as dc, gateway(home, dc, fake_openai):
        if where == "guild":
            asked = dc.post(GENERAL_ID, "tell me a long story", mention_bot=True)
        else:
            asked = dc.dm("tell me a long story")
        await delivered(home)

    channel = asked["channel_id"]
    [shown] = bot_messages(dc, channel)
    assert shown["content"] == ANSWER
    assert shown["message_reference"]["message_id"] == asked["id"]  # a reply, like the final
    first, *edits = dc.sent
    assert (first.via, first.id, first.reference_id) == ("channel", shown["id"], asked["id"])
    assert [(e.via, e.id) for e in edits] == [("edit", shown["id"])] * len(edits)
    *updates, final = [first, *edits]
    assert len(updates) >= 2  # it grew while the model wrote
    assert ANSWER.startswith(first.content)
    assert len(first.content) < len(ANSWER)
    assert min(gaps(updates)) >= PACED
    assert final.content == ANSWER
    [item] = rows(home, "SELECT preview_id FROM inbox")
    assert item["preview_id"] == shown["id"]  # recorded: a restart would edit it too
    [reply] = rows(home, "SELECT preview_id, parts_sent FROM outbox")
    assert reply["preview_id"] == shown["id"]


async def test_a_tool_call_shows_one_progress_line_in_the_same_bubble(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    tool = SlowTool()
    fake_openai.reply_tool_call("lookup_notes", {}, text="Let me look.")
    fake_openai.reply_text("You like green tea.")
    async with FakeDiscord() as dc, gateway(home, dc, fake_openai, tools=[tool]):
        dc.post(GENERAL_ID, "what tea do I like?", mention_bot=True)
        await dc.wait_until(lambda: any("lookup_notes" in m.content for m in dc.sent))
        tool.release.set()
        await delivered(home)

    [shown] = bot_messages(dc, GENERAL_ID)
    assert shown["content"] == "You like green tea."
    assert {m.id for m in dc.sent} == {shown["id"]}  # one bubble throughout
    progress = next(m for m in dc.sent if "lookup_notes" in m.content)
    assert progress.content == "Let me look.\n\nusing lookup_notes…"


@pytest.mark.parametrize(
    "env",
    [{"CHATGATE_DISCORD__STREAMING": "off"}, {"CHATGATE_STREAMING__ENABLED": "false"}],
    ids=["discord.streaming-off", "streaming.enabled-false"],
)
async def test_with_streaming_off_the_reply_is_one_plain_message(
    home: Path, fake_openai: FakeOpenAIServer, env: dict[str, str]
) -> None:
    fake_openai.token_seconds = TOKEN_SECONDS
    fake_openai.reply_text(ANSWER)
    async with FakeDiscord() as dc, gateway(home, dc, fake_openai, env=env):
        dc.dm("tell me a long story")
        await delivered(home)

    assert [(m.via, m.content) for m in dc.sent] == [("channel", ANSWER)]
    assert rows(home, "SELECT preview_id FROM inbox") == [{"preview_id": None}]


async def test_a_preview_deleted_by_someone_is_left_alone_and_the_final_sent_once(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    tool = SlowTool()
    fake_openai.reply_tool_call("lookup_notes", {}, text="Let me look.")
    fake_openai.reply_text("You like green tea.")
    async with FakeDiscord() as dc, gateway(home, dc, fake_openai, tools=[tool]):
        dc.post(GENERAL_ID, "what tea do I like?", mention_bot=True)
        await dc.wait_until(lambda: any("lookup_notes" in m.content for m in dc.sent))
        preview = dc.sent[0]
        dc.delete_message(GENERAL_ID, preview.id)  # a moderator removes it mid-answer
        tool.release.set()
        await delivered(home)

    [final] = bot_messages(dc, GENERAL_ID)
    assert final["content"] == "You like green tea."
    assert final["id"] != preview.id
    assert [m.content for m in dc.sent if m.via == "channel"][-1] == "You like green tea."
    assert sum(m.content == "You like green tea." for m in dc.sent) == 1


async def test_an_update_stuck_on_a_rate_limit_does_not_hold_the_final(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.token_seconds = TOKEN_SECONDS / 2  # about a second and a half
    fake_openai.reply_text(ANSWER)
    async with FakeDiscord() as dc, gateway(home, dc, fake_openai):
        dc.dm("tell me a long story")
        await dc.wait_sent(1)  # the preview is up; its first edit will wait 6 s on a 429
        dc.fail("PATCH", r"/channels/\d+/messages/\d+", 429, retry_after=6.0)
        await delivered(home)
        final = dc.sent[-1]
        preview = dc.sent[0]
        await dc.wait_until(lambda: preview.id in {m for _, m in dc.deleted}, timeout=15)

    assert (final.via, final.content) == ("channel", ANSWER)  # sent new, not behind the edit
    stuck = [m for m in dc.sent if m.via == "edit" and m.id == preview.id]
    assert stuck  # the held edit did land in the end, on the preview, after the final
    assert all(edit.at > final.at for edit in stuck)
    assert [m["content"] for m in bot_messages(dc, final.channel_id)] == [ANSWER]


async def test_the_final_takes_over_the_preview_part_by_part(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    lines = "\n".join(f"{i:03d} " + "a fairly long line of the listing " * 3 for i in range(60))
    assert len(lines) > 4000
    async with FakeDiscord() as dc, gateway(home, dc, fake_openai) as gw:
        adapter = gw.gateway.adapters["discord"]
        asked = dc.post(GENERAL_ID, "hi", mention_bot=True)
        await delivered(home)
        preview_id = dc.sent[0].id  # the streamed echo: a message of the bot's to take over
        buttons = (ReplyAction("Approve once", "/approve 1"),)
        reply = OutboundMessage(
            id=99, platform="discord", chat_id=GENERAL_ID, text=lines, reply_to=asked["id"]
        )
        first_id = await adapter.send(
            dataclasses.replace(reply, preview_id=preview_id, actions=buttons)
        )
        draft = await adapter.send(dataclasses.replace(reply, id=100, text="Draft."))
        assert draft is not None
        dc.delete_message(GENERAL_ID, draft)  # a preview gone before its final
        again = await adapter.send(
            dataclasses.replace(reply, id=101, text="Short.", preview_id=draft)
        )

    parts = bot_messages(dc, GENERAL_ID)
    assert parts[0]["id"] == preview_id  # the first part is the preview, edited
    assert first_id == parts[-2]["id"]  # the last part's id is returned
    assert all(len(p["content"]) <= 2000 for p in parts)
    listing = "".join(p["content"] for p in parts[:-1])
    assert all(listing.count(f"{i:03d} ") == 1 for i in range(60))  # every line, once
    assert parts[-2]["components"]  # the buttons under the last part
    assert parts[-1]["content"] == "Short."  # its preview was gone: sent new
    assert again == parts[-1]["id"]


def test_discord_streaming_settings_are_checked(home: Path) -> None:
    def load(text: str) -> Any:
        (home / "config.yaml").write_text(text, encoding="utf-8")
        return load_settings(home, {"DISCORD_BOT_TOKEN": "t"}).platform("discord")

    assert load("discord:\n  streaming: off\n").streaming == "off"  # YAML's false
    assert load("discord: {}\n").stream_updates_per_second == 10
    with pytest.raises(ConfigError, match="discord.streaming"):
        load("discord:\n  streaming: sometimes\n")
    with pytest.raises(ConfigError, match="discord.stream_updates_per_second"):
        load("discord:\n  stream_updates_per_second: 0\n")


async def test_after_a_kill_mid_stream_the_turn_streams_into_the_same_message(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.token_seconds = TOKEN_SECONDS * 2  # about five seconds: time to kill it
    fake_openai.reply_text(ANSWER)  # the first run's answer, cut short by the kill
    fake_openai.reply_text(ANSWER)  # the run after the restart
    async with FakeDiscord() as dc:
        env = {**fake_openai.gateway_env(), **dc.gateway_env(DISCORD_ALLOW_ALL_USERS="true")}
        with gateway_process(home, env) as (proc, url):
            async with client_for(url) as client:
                await wait_ready(proc, client)
            asked = dc.post(GENERAL_ID, "tell me a long story", mention_bot=True)
            await dc.wait_until(lambda: len(dc.sent) >= 2)  # the preview, and an edit of it
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        before = len(dc.sent)
        with gateway_process(home, env) as (proc, url):
            await delivered(home)

    preview = dc.sent[0]
    assert preview.via == "channel"
    after = dc.sent[before:]
    assert [(m.via, m.id) for m in after] == [("edit", preview.id)] * len(after)
    assert after[-1].content == ANSWER
    [shown] = bot_messages(dc, GENERAL_ID)
    assert (shown["id"], shown["content"]) == (preview.id, ANSWER)
    assert shown["message_reference"]["message_id"] == asked["id"]
    assert len(fake_openai.requests) == 2
