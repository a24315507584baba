"""The Discord adapter end to end: the real discord.py against a fake Discord."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import adapters.discord.adapter
from adapters.discord import SPEC as DISCORD
from core.clock import SystemClock
from core.errors import ConfigError
from gateway.config import load_settings
from gateway.runtime import open_gateway, platform_services
from tests.fakes.discord_server import (
    BOT_USER,
    DEFAULT_USER,
    GENERAL_ID,
    FakeDiscord,
    make_user,
)
from tests.fakes.loopback import free_port
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway

MENTION = f"<@{BOT_USER['id']}>"


@asynccontextmanager
async def discord_gateway(
    home: Path, dc: FakeDiscord, model: FakeOpenAIServer, **env: str
) -> AsyncIterator[RunningGateway]:
    environment = {**model.gateway_env(), **dc.gateway_env(DISCORD_ALLOW_ALL_USERS="true")}
    # These tests read what the bot sent as whole replies; replies that stream (a message
    # sent, then edited) are tested in test_discord_streaming_e2e.py.
    environment["CHATGATE_DISCORD__STREAMING"] = "off"
    environment.update(env)
    readies = dc.ready_count
    async with running_gateway(home, environment) as gw:
        await dc.wait_ready(readies + 1)
        yield gw


def rows(home: Path, sql: str) -> list[dict[str, Any]]:
    with sqlite3.connect(home / "state.db") as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql)]


def config(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")


async def test_a_direct_message_is_answered_with_a_reference_and_typing(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        sent = dc.dm("hello there")
        [reply] = await dc.wait_sent(1)
        typing = await dc.wait_typing(1)
        commands = await dc.wait_commands()

    dm = sent["channel_id"]
    assert (reply.channel_id, reply.content) == (dm, "echo: hello there")
    assert reply.reference_id == sent["id"]
    assert typing[0] == dm
    assert {"new", "status", "stop", "help"} <= {c["name"] for c in commands}
    [session] = rows(home, "SELECT session_key, turn_count FROM sessions")
    assert session == {"session_key": f"discord:{dm}", "turn_count": 1}


async def test_in_a_guild_channel_only_a_mention_or_a_reply_is_answered(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        dc.post(GENERAL_ID, "just chatting among humans")
        asked = dc.post(GENERAL_ID, "what time is it?", mention_bot=True)
        [first] = await dc.wait_sent(1)
        followup = dc.post(GENERAL_ID, "and the date?", reply_to=first.id)
        await dc.wait_sent(2)

    assert first.content == "echo: what time is it?"
    assert first.reference_id == asked["id"]
    assert dc.sent[1].content == "echo: and the date?"
    assert dc.sent[1].reference_id == followup["id"]
    assert len(rows(home, "SELECT id FROM inbox")) == 2  # the chatter never reached the core
    [session] = rows(home, "SELECT session_key, turn_count FROM sessions")
    assert session == {
        "session_key": f"discord:{GENERAL_ID}:u={DEFAULT_USER['id']}",
        "turn_count": 2,
    }


async def test_a_thread_is_one_session_shared_by_its_members(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    bea = make_user("bea")
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        thread = dc.create_thread(GENERAL_ID, "planning")
        dc.post(thread["id"], "first idea", mention_bot=True)
        [answer] = await dc.wait_sent(1)
        dc.post(thread["id"], "second idea", author=bea, reply_to=answer.id)
        await dc.wait_sent(2)

    assert [m.channel_id for m in dc.sent] == [thread["id"], thread["id"]]
    [session] = rows(home, "SELECT session_key, turn_count FROM sessions")
    assert session == {"session_key": f"discord:{GENERAL_ID}:{thread['id']}", "turn_count": 2}


async def test_other_bots_are_ignored_unless_allowed(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    robot = make_user("robot", bot=True)
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        dc.post(GENERAL_ID, "beep", author=robot, mention_bot=True)
        dc.post(GENERAL_ID, "a human asks", mention_bot=True)
        [reply] = await dc.wait_sent(1)
    assert reply.content == "echo: a human asks"
    assert len(rows(home, "SELECT id FROM inbox")) == 1


async def test_who_may_talk_users_roles_and_channels(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    mod, stranger, guest = make_user("mod"), make_user("stranger"), make_user("guest")
    async with FakeDiscord() as dc:
        helpers = dc.add_role("helpers")
        dc.set_roles(mod["id"], [helpers["id"]])
        open_channel = dc.add_channel("ask-the-bot")
        env = {
            "DISCORD_ALLOWED_USERS": "ada",
            "DISCORD_ALLOWED_ROLES": helpers["id"],
            "DISCORD_ALLOWED_CHANNELS": open_channel["id"],
            "DISCORD_ALLOW_ALL_USERS": "",
        }
        async with discord_gateway(home, dc, fake_openai, **env):
            dc.post(GENERAL_ID, "by name", mention_bot=True)
            await dc.wait_sent(1)
            dc.post(GENERAL_ID, "by role", author=mod, mention_bot=True)
            await dc.wait_sent(2)
            dc.post(open_channel["id"], "by channel", author=guest, mention_bot=True)
            await dc.wait_sent(3)
            dc.post(GENERAL_ID, "let me in", author=stranger, mention_bot=True)
            dc.post(GENERAL_ID, "please", author=stranger, mention_bot=True)
            await dc.wait_sent(4)
            dc.post(GENERAL_ID, "done", mention_bot=True)
            await dc.wait_sent(5)

    texts = [m.content for m in dc.sent]
    assert texts[:3] == ["echo: by name", "echo: by role", "echo: by channel"]
    assert "only talk with people" in texts[3]  # one refusal, not two
    assert texts[4] == "echo: done"
    assert len(rows(home, "SELECT id FROM inbox")) == 4


async def test_an_attachment_is_downloaded_and_named_in_the_turn(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        dc.dm("summarise this", attachments=[("notes.txt", b"buy milk\n", "text/plain")])
        await dc.wait_sent(1)

    [item] = rows(home, "SELECT text FROM inbox")
    assert item["text"].startswith("summarise this\n[attached notes.txt (text/plain, 9 bytes): ")
    path = Path(item["text"].split(": ", 1)[1].rstrip("]"))
    assert path.read_bytes() == b"buy milk\n"  # noqa: ASYNC240 - the test's own check  # noqa: ASYNC240 - a test reading its result


async def test_a_long_reply_is_split_with_code_fences_reopened(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    code = "\n".join(f"print('line {i:04d} of a long listing')" for i in range(160))
    prose = "\n\n".join(f"Paragraph {i}: " + "words " * 60 for i in range(8))
    answer = f"{prose}\n\n```python\n{code}\n```\n\nThat is all."
    assert len(answer) > 7000
    fake_openai.reply_text(answer)
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        asked = dc.dm("show me the listing")
        await dc.wait_until(lambda: any("That is all." in m.content for m in dc.sent))

    parts = [m.content for m in dc.sent]
    assert len(parts) >= 4
    assert all(len(p) <= 2000 for p in parts)
    assert dc.sent[0].reference_id == asked["id"]
    assert all(m.reference_id is None for m in dc.sent[1:])
    in_code = [p for p in parts if "line 0" in p]
    assert len(in_code) >= 3
    for part in in_code:
        assert part.count("```") % 2 == 0  # every part's fences are closed
    for part in in_code[1:]:
        assert part.startswith("```python\n")  # and reopened with the language
    listing = "".join(parts)
    assert all(listing.count(f"line {i:04d}") == 1 for i in range(160))  # all, once


async def test_a_part_whose_answer_was_lost_is_not_posted_twice(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        # The message is created, but the 500 on the way back makes discord.py send again.
        dc.fail("POST", r"/channels/\d+/messages", 500, after_handling=True)
        dc.dm("are you there?")
        await dc.wait_until(lambda: len(dc.requests_to("POST", "/messages")) == 2)

    assert [m.content for m in dc.sent] == ["echo: are you there?"]
    assert len(dc.history(dc.sent[0].channel_id)) == 2  # the question and one answer


async def test_a_slash_command_is_answered_within_discords_window(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        await dc.wait_commands()
        dc.dm("remember this chat")
        await dc.wait_sent(1)
        dc.slash("status", dm=True)
        [response] = await dc.wait_responses(1)
        dc.slash("new", dm=True)
        await dc.wait_responses(2)

    assert response.type == 4
    assert response.seconds_after_dispatch < 3
    assert "Session" in response.content or "session" in response.content
    ended = rows(home, "SELECT end_reason FROM sessions WHERE end_reason IS NOT NULL")
    assert len(ended) == 1


async def test_a_slow_slash_command_is_deferred_then_answered(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    release = asyncio.Event()
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        await dc.wait_commands()
        for text in ("first thing", "second thing"):
            dc.dm(text)
        await dc.wait_sent(2)
        fake_openai.block(release)  # the summary /compact asks the model for
        dc.slash("compact", dm=True)
        [deferral] = await dc.wait_responses(1)
        release.set()
        [*_, answer] = await dc.wait_sent(3)

    assert deferral.type == 5
    assert deferral.seconds_after_dispatch < 3
    assert answer.interaction_id is not None  # the answer replaced "thinking…"
    assert "summarised" in answer.content


async def test_a_dropped_socket_resumes_and_nothing_is_answered_twice(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        dc.dm("before the drop")
        await dc.wait_sent(1)
        await dc.drop_connection()
        dc.dm("while the socket was down")
        await dc.wait_resumed(1)
        await dc.wait_sent(2)
        dc.dm("after the resume")
        await dc.wait_sent(3)

    assert [m.content for m in dc.sent] == [
        "echo: before the drop",
        "echo: while the socket was down",
        "echo: after the resume",
    ]
    assert dc.identifies == 1


async def test_messages_posted_while_the_gateway_was_down_are_answered_once(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc:
        async with discord_gateway(home, dc, fake_openai):
            dc.dm("first")
            dc.post(GENERAL_ID, "in the channel", mention_bot=True)
            await dc.wait_sent(2)
        missed_dm = dc.dm("sent while you were away")
        missed_channel = dc.post(GENERAL_ID, "anyone there?", mention_bot=True)
        dc.post(GENERAL_ID, "not for the bot")
        async with discord_gateway(home, dc, fake_openai):
            await dc.wait_sent(4)
            await dc.drop_connection()  # a reconnect reads history again: no duplicates
            await dc.wait_resumed(1)
            dc.dm("last")
            await dc.wait_sent(5)

    answered = {m.reference_id: m.content for m in dc.sent}
    assert answered[missed_dm["id"]] == "echo: sent while you were away"
    assert answered[missed_channel["id"]] == "echo: anyone there?"
    assert len(dc.sent) == 5
    assert len(rows(home, "SELECT id FROM inbox")) == 5


async def test_a_deaf_connection_is_detected_and_healed(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    config(home, "discord:\n  watchdog_silence_seconds: 1\n")
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai) as gw:
        dc.refuse_connections = True
        dc.deaf = True  # heartbeats are acknowledged, but no event arrives any more
        lost = dc.post(GENERAL_ID, "can you hear me?", mention_bot=True)
        await dc.wait_refused(1)  # the watchdog gave up on the socket
        unready = await gw.client.get("/readyz")
        dc.refuse_connections = False
        [reply] = await dc.wait_sent(1)
        ready = await gw.client.get("/readyz")

    assert unready.status_code == 503
    assert unready.json()["unhealthy"] == ["discord"]
    assert reply.reference_id == lost["id"]
    assert reply.content == "echo: can you hear me?"
    assert ready.status_code == 200


def from_discord_py(task: asyncio.Task[Any]) -> bool:
    code = getattr(task.get_coro(), "cr_code", None)
    return code is not None and "/discord/" in code.co_filename


async def test_a_stop_right_after_ready_leaves_no_discord_task_and_no_on_ready(
    home: Path,
    fake_openai: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # discord.py holds on_ready back until no guild arrived for this long: stop within it.
    monkeypatch.setattr(adapters.discord.adapter, "GUILD_READY_SECONDS", 1.0)
    caplog.set_level(logging.INFO, logger="adapters.discord")
    async with FakeDiscord() as dc:
        async with discord_gateway(home, dc, fake_openai):
            pass  # READY has arrived; its on_ready is still held back
        left = [task for task in asyncio.all_tasks() if from_discord_py(task)]

    assert left == []
    assert "connected as" not in caplog.text


async def test_a_rejected_token_stops_start_up(home: Path, fake_openai: FakeOpenAIServer) -> None:
    async with FakeDiscord() as dc:
        env = {**fake_openai.gateway_env(), **dc.gateway_env(DISCORD_BOT_TOKEN="wrong")}
        settings = load_settings(home, env)
        services = platform_services(settings, SystemClock(), asyncio.Event())
        adapter = DISCORD.adapter(settings.platform("discord"), services)
        with pytest.raises(ConfigError, match="discord.bot_token"):
            async with open_gateway(settings, [adapter]):
                pass


async def test_a_forum_post_is_a_thread_and_channels_can_share_one_session(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    config(home, "discord:\n  group_sessions_per_user: false\n")
    bea = make_user("bea")
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        forum = dc.add_channel("questions", kind="forum")
        post = dc.create_thread(forum["id"], "How do I deploy?")
        dc.post(post["id"], "step one?", mention_bot=True)
        await dc.wait_sent(1)
        dc.post(GENERAL_ID, "hi from ada", mention_bot=True)
        dc.post(GENERAL_ID, "hi from bea", author=bea, mention_bot=True)
        await dc.wait_sent(3)

    keys = {r["session_key"] for r in rows(home, "SELECT session_key FROM sessions")}
    assert keys == {f"discord:{forum['id']}:{post['id']}", f"discord:{GENERAL_ID}"}
    assert dc.sent[0].channel_id == post["id"]


async def test_without_the_message_content_intent_mentions_and_dms_still_work(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc:
        dc.message_content_enabled = False  # not switched on in the developer portal
        async with discord_gateway(home, dc, fake_openai):
            dc.post(GENERAL_ID, "with a mention", mention_bot=True)
            await dc.wait_sent(1)
            dc.dm("in a DM")
            await dc.wait_sent(2)

    assert [m.content for m in dc.sent] == ["echo: with a mention", "echo: in a DM"]


async def test_a_role_admits_a_message_caught_up_after_a_restart(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    mod = make_user("mod")
    async with FakeDiscord() as dc:
        helpers = dc.add_role("helpers")
        dc.set_roles(mod["id"], [helpers["id"]])
        env = {"DISCORD_ALLOWED_ROLES": helpers["id"], "DISCORD_ALLOW_ALL_USERS": ""}
        async with discord_gateway(home, dc, fake_openai, **env):
            dc.post(GENERAL_ID, "before", author=mod, mention_bot=True)
            await dc.wait_sent(1)
        missed = dc.post(GENERAL_ID, "while you were away", author=mod, mention_bot=True)
        dc.post(GENERAL_ID, "me too", author=make_user("stranger"), mention_bot=True)
        async with discord_gateway(home, dc, fake_openai, **env):
            [_, reply] = await dc.wait_sent(2)
            dc.dm("a stranger's DM is refused", author=make_user("other"))
            await dc.wait_sent(3)

    assert reply.reference_id == missed["id"]  # history has no roles: the member was fetched
    assert "only talk with people" in dc.sent[2].content  # refusals only for live messages
    assert len(rows(home, "SELECT id FROM inbox")) == 2


async def test_the_gateway_starts_while_discord_is_unreachable(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    port = free_port()  # nothing listens there
    env = {
        **fake_openai.gateway_env(),
        "DISCORD_BOT_TOKEN": "token",
        "CHATGATE_DISCORD_API_BASE": f"http://127.0.0.1:{port}/api/v10",
        "CHATGATE_DISCORD_GATEWAY_URL": f"ws://127.0.0.1:{port}/gateway",
    }
    async with running_gateway(home, env) as gw:
        ready = await gw.client.get("/readyz")
        answer = await gw.say("the webhook still works")

    assert ready.status_code == 503
    assert ready.json()["unhealthy"] == ["discord"]
    assert answer.json()["replies"] == [{"text": "echo: the webhook still works"}]


async def test_a_quiet_server_is_probed_not_reconnected(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    config(home, "discord:\n  watchdog_silence_seconds: 0.4\n")
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai) as gw:
        await dc.wait_until(lambda: dc.member_requests >= 2, what="two probes")
        ready = await gw.client.get("/readyz")

    assert ready.status_code == 200
    assert (dc.identifies, dc.resumes) == (1, 0)  # the probes were answered: no reconnect


async def test_roles_and_channels_are_allowed_by_id_only(home: Path) -> None:
    with pytest.raises(ConfigError, match="discord.allowed_roles.*not an id"):
        load_settings(home, {"DISCORD_BOT_TOKEN": "t", "DISCORD_ALLOWED_ROLES": "admins"})
    with pytest.raises(ConfigError, match="discord.allowed_channels"):
        load_settings(home, {"DISCORD_BOT_TOKEN": "t", "DISCORD_ALLOWED_CHANNELS": "#general"})


async def test_a_bot_cannot_pass_for_an_allowed_user_by_name(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    config(home, "discord:\n  allow_bots: true\n")
    impostor = make_user("ada", bot=True)  # bot names are not unique
    env = {"DISCORD_ALLOWED_USERS": "ada", "DISCORD_ALLOW_ALL_USERS": ""}
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai, **env):
        dc.post(GENERAL_ID, "let me in", author=impostor, mention_bot=True)
        dc.post(GENERAL_ID, "the real ada", mention_bot=True)
        await dc.wait_sent(2)

    assert "only talk with people" in dc.sent[0].content
    assert dc.sent[1].content == "echo: the real ada"


async def test_a_photo_and_the_question_about_it_arrive_in_order(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        dc.dm("", attachments=[("cat.png", b"\x89PNG fake", "image/png")])
        dc.dm("what is in this picture?")
        await dc.wait_sent(2)

    texts = [r["text"] for r in rows(home, "SELECT text FROM inbox ORDER BY id")]
    assert texts[0].startswith("[attached cat.png")  # downloaded first, still stored first
    assert texts[1] == "what is in this picture?"


async def test_a_slash_command_from_someone_not_allowed_is_refused_privately(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    env = {"DISCORD_ALLOWED_USERS": "ada", "DISCORD_ALLOW_ALL_USERS": ""}
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai, **env):
        await dc.wait_commands()
        dc.slash("status", user=make_user("stranger"))
        [refusal] = await dc.wait_responses(1)
        dc.slash("status")  # ada, in the guild channel
        await dc.wait_responses(2)

    assert refusal.type == 4
    assert refusal.flags & 64  # ephemeral: only the stranger sees it
    assert "only talk with people" in refusal.content
    assert "Session" in dc.responses[1].content or "session" in dc.responses[1].content
    [command] = rows(home, "SELECT session_key, text FROM inbox")
    assert command == {
        "session_key": f"discord:{GENERAL_ID}:u={DEFAULT_USER['id']}",
        "text": "/status",
    }


async def test_a_live_message_right_after_a_restart_does_not_hide_a_missed_one(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc:
        async with discord_gateway(home, dc, fake_openai):
            dc.post(GENERAL_ID, "earlier", mention_bot=True)
            await dc.wait_sent(1)
        missed = dc.post(GENERAL_ID, "posted while you were away", mention_bot=True)
        async with discord_gateway(home, dc, fake_openai):
            # Live, before the adapter's on_ready: newer than the missed one.
            live = dc.post(GENERAL_ID, "hello? anyone?", mention_bot=True)
            await dc.wait_sent(3)

    answered = {m.reference_id for m in dc.sent}
    assert {missed["id"], live["id"]} <= answered
    assert len(dc.sent) == 3


async def test_a_photo_sent_while_away_comes_before_the_question_asked_after(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc:
        async with discord_gateway(home, dc, fake_openai):
            dc.dm("hello")
            await dc.wait_sent(1)
        dc.dm("", attachments=[("cat.png", b"\x89PNG fake", "image/png")])
        async with discord_gateway(home, dc, fake_openai):
            dc.dm("what is in the picture I sent?")  # live, while the catch-up is due
            await dc.wait_sent(3)

    texts = [r["text"] for r in rows(home, "SELECT text FROM inbox ORDER BY id")]
    assert texts[1].startswith("[attached cat.png")
    assert texts[2] == "what is in the picture I sent?"


async def test_an_attachment_over_the_size_cap_is_named_but_not_read(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    config(home, "discord:\n  max_file_bytes: 1000\n")
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai):
        dc.dm("look", attachments=[("big.bin", b"x" * 5000, "application/octet-stream")])
        await dc.wait_sent(1)

    [item] = rows(home, "SELECT text FROM inbox")
    assert item["text"] == "look\n[big.bin was not read: larger than the file size limit]"
    assert not (home / "cache" / "discord").exists()  # nothing was downloaded


async def test_slash_commands_are_registered_once_not_at_every_start(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc:
        async with discord_gateway(home, dc, fake_openai):
            commands = await dc.wait_commands()
        first_start = dc.requests_to("PUT", "/commands")
        dc.requests.clear()
        async with discord_gateway(home, dc, fake_openai):
            await dc.wait_until(lambda: bool(dc.requests_to("GET", "/commands")))
            dc.dm("hello")  # a whole turn: the comparison that follows the GET is long done
            await dc.wait_sent(1)
        second_start = dc.requests_to("PUT", "/commands")

    assert len(commands) >= 4
    assert len(first_start) == 1
    assert second_start == []  # the same commands were found in place


async def test_unacknowledged_heartbeats_get_a_fresh_connection(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    config(home, "discord:\n  watchdog_silence_seconds: 0.4\n")  # looks every 0.1 s
    async with (
        FakeDiscord(heartbeat_interval=0.2) as dc,
        discord_gateway(home, dc, fake_openai),
    ):
        dc.ack_heartbeats = False  # Discord's side of the socket went quiet
        await dc.wait_ready(2)  # the watchdog started a new session
        dc.ack_heartbeats = True
        dc.dm("still there?")
        [reply] = await dc.wait_sent(1)

    assert reply.content == "echo: still there?"
    assert dc.identifies >= 2


async def test_a_stranger_in_a_dm_is_offered_a_pairing_code_also_for_a_slash_command(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    stranger = make_user("stranger")
    env = {"DISCORD_ALLOWED_USERS": "ada", "DISCORD_ALLOW_ALL_USERS": ""}
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai, **env):
        await dc.wait_commands()
        dc.dm("hello, can we talk?", author=stranger)
        await dc.wait_sent(1)
        dc.slash("status", user=make_user("another"), dm=True)
        [offer] = await dc.wait_responses(1)

    [code_message] = dc.sent_to(dc.dm_channel(stranger)["id"])
    assert "send the owner this code" in code_message.content
    assert offer.flags & 64  # told privately
    assert "send the owner this code" in offer.content
    assert fake_openai.requests == []
    assert rows(home, "SELECT id FROM inbox") == []  # nothing a stranger sent is stored
