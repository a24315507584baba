"""The fake Discord drives the real discord.py: REST, gateway, interactions and faults."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import discord
import httpx
import pytest
import yarl
from discord import app_commands

from tests.fakes.discord_server import (
    BOT_USER,
    DEFAULT_TOKEN,
    DEFAULT_USER,
    GENERAL_ID,
    FakeDiscord,
    make_user,
)


class Bot(discord.Client):
    """A small client that records what it hears (its own messages excluded)."""

    def __init__(self, *, message_content: bool = True, **options: Any) -> None:
        intents = discord.Intents.none()
        intents.guilds = True
        intents.guild_messages = True
        intents.dm_messages = True
        intents.message_content = message_content
        super().__init__(intents=intents, guild_ready_timeout=0.05, **options)
        self.tree = app_commands.CommandTree(self)
        self.received: list[discord.Message] = []
        self.ready_event = asyncio.Event()
        self._changed = asyncio.Event()

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        """No 5 s pause before a re-IDENTIFY (discord.py's default), so tests stay fast."""

    async def on_ready(self) -> None:
        self.ready_event.set()

    async def on_message(self, message: discord.Message) -> None:
        if self.user is not None and message.author.id == self.user.id:
            return
        self.received.append(message)
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_received(self, n: int = 1, *, timeout: float = 10.0) -> list[discord.Message]:  # noqa: ASYNC109
        async with asyncio.timeout(timeout):
            while len(self.received) < n:
                await self._changed.wait()
        return self.received[:n]


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as server:
        _point_discord_at(server, monkeypatch)
        yield server


def _point_discord_at(server: FakeDiscord, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discord.http.Route, "BASE", server.api_base)
    gateway = yarl.URL(server.gateway_url)
    monkeypatch.setattr(discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", gateway)


@contextlib.asynccontextmanager
async def running(bot: Bot) -> AsyncIterator[Bot]:
    """Start ``bot`` against the fake, wait for on_ready, close it cleanly afterwards."""
    task = asyncio.create_task(bot.start(DEFAULT_TOKEN))
    ready = asyncio.create_task(bot.ready_event.wait())
    try:
        await asyncio.wait({task, ready}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            await task  # surfaces the startup error
        assert ready.done(), "discord.py never became ready"
        yield bot
    finally:
        ready.cancel()
        await bot.close()
        await task
        # Let event handlers discord.py scheduled while closing (on_disconnect...) finish.
        events = [t for t in asyncio.all_tasks() if t.get_name().startswith("discord.py: ")]
        await asyncio.gather(*events, return_exceptions=True)


@pytest.fixture
async def bot(fake: FakeDiscord) -> AsyncIterator[Bot]:
    async with running(Bot()) as client:
        yield client


def _text_channel(bot: Bot, channel_id: str) -> discord.TextChannel:
    channel = bot.get_channel(int(channel_id))
    assert isinstance(channel, discord.TextChannel)
    return channel


# -- login, READY, the world -------------------------------------------------------------


async def test_login_and_ready_populate_the_cache(fake: FakeDiscord, bot: Bot) -> None:
    assert bot.user is not None
    assert str(bot.user.id) == BOT_USER["id"]
    assert bot.application_id is not None
    general = _text_channel(bot, GENERAL_ID)
    assert general.name == "general"
    assert general.guild.me is not None
    assert general.guild.default_role.id == general.guild.id
    assert fake.connected
    assert (fake.identifies, fake.resumes) == (1, 0)
    paths = [r.path for r in fake.requests]
    assert "/users/@me" in paths
    assert "/oauth2/applications/@me" in paths


async def test_wrong_token_is_a_login_failure(fake: FakeDiscord) -> None:
    client = Bot()
    with pytest.raises(discord.LoginFailure):
        await client.login("not-the-token")
    await client.close()
    assert fake.requests[0].path == "/users/@me"


async def test_channels_added_while_connected_are_dispatched(fake: FakeDiscord, bot: Bot) -> None:
    channel = fake.add_channel("random")
    fake.post(channel["id"], "in random")
    [message] = await bot.wait_received(1)
    assert isinstance(message.channel, discord.TextChannel)
    assert message.channel.name == "random"


# -- incoming messages --------------------------------------------------------------------


async def test_guild_mention_author_is_member_with_roles(fake: FakeDiscord, bot: Bot) -> None:
    role = fake.add_role("operators")
    fake.set_roles(DEFAULT_USER["id"], [role["id"]])
    fake.post(GENERAL_ID, "status please", mention_bot=True)
    [message] = await bot.wait_received(1)
    assert isinstance(message.author, discord.Member)
    assert [r.name for r in message.author.roles] == ["@everyone", "operators"]
    assert bot.user in message.mentions
    assert message.content == f"<@{BOT_USER['id']}> status please"
    assert message.guild is not None


async def test_direct_message(fake: FakeDiscord, bot: Bot) -> None:
    fake.dm("hello in private")
    [message] = await bot.wait_received(1)
    assert isinstance(message.channel, discord.DMChannel)
    assert message.guild is None
    assert message.author.name == "ada"
    assert message.content == "hello in private"


async def test_thread_messages_resolve_to_threads(fake: FakeDiscord) -> None:
    early = fake.create_thread(GENERAL_ID, "known at startup")  # arrives in GUILD_CREATE
    async with running(Bot()) as bot:
        forum = fake.add_channel("help", kind="forum")
        late = fake.create_thread(forum["id"], "a forum post")  # THREAD_CREATE
        fake.post(early["id"], "in the early thread")
        fake.post(late["id"], "in the forum post")
        first, second = await bot.wait_received(2)
    assert isinstance(first.channel, discord.Thread)
    assert first.channel.parent_id == int(GENERAL_ID)
    assert isinstance(first.channel.parent, discord.TextChannel)
    assert isinstance(second.channel, discord.Thread)
    assert isinstance(second.channel.parent, discord.ForumChannel)


async def test_without_message_content_intent_only_mentions_carry_text(
    fake: FakeDiscord,
) -> None:
    async with running(Bot(message_content=False)) as bot:
        fake.post(GENERAL_ID, "chatter")
        fake.post(GENERAL_ID, "for you", mention_bot=True)
        fake.dm("private")
        chatter, mention, private = await bot.wait_received(3)
    assert chatter.content == ""
    assert mention.content.endswith("for you")
    assert private.content == "private"


async def test_message_from_another_bot(fake: FakeDiscord, bot: Bot) -> None:
    other = make_user("helperbot", bot=True)
    fake.post(GENERAL_ID, "beep", author=other)
    [message] = await bot.wait_received(1)
    assert message.author.bot


async def test_attachments_are_downloadable(fake: FakeDiscord, bot: Bot) -> None:
    fake.post(GENERAL_ID, "see file", attachments=[("notes.txt", b"hello file", "text/plain")])
    [message] = await bot.wait_received(1)
    [attachment] = message.attachments
    assert attachment.filename == "notes.txt"
    assert attachment.content_type == "text/plain"
    assert await attachment.read() == b"hello file"


async def test_incoming_reply_carries_the_referenced_message(fake: FakeDiscord, bot: Bot) -> None:
    first = fake.post(GENERAL_ID, "question")
    fake.post(GENERAL_ID, "follow-up", reply_to=first["id"])
    _, reply = await bot.wait_received(2)
    assert reply.type is discord.MessageType.reply
    assert reply.reference is not None
    assert reply.reference.message_id == int(first["id"])
    assert isinstance(reply.reference.resolved, discord.Message)
    assert reply.reference.resolved.content == "question"


# -- what the bot sends ----------------------------------------------------------------------


async def test_reply_is_recorded_with_its_reference(fake: FakeDiscord, bot: Bot) -> None:
    fake.post(GENERAL_ID, "ping", mention_bot=True)
    [message] = await bot.wait_received(1)
    sent = await message.channel.send("pong", reference=message)
    [record] = await fake.wait_sent(1)
    assert (record.content, record.via, record.channel_id) == ("pong", "channel", GENERAL_ID)
    assert record.reference_id == str(message.id)
    assert record.id == str(sent.id)
    assert str(sent.author.id) == BOT_USER["id"]
    assert fake.history(GENERAL_ID)[-1]["type"] == 19


async def test_sending_validation_matches_discord(fake: FakeDiscord, bot: Bot) -> None:
    general = _text_channel(bot, GENERAL_ID)
    with pytest.raises(discord.HTTPException) as too_long:
        await general.send("x" * 2001)
    assert (too_long.value.status, too_long.value.code) == (400, 50035)
    with pytest.raises(discord.HTTPException) as empty:
        await general.send()
    assert empty.value.code == 50006
    missing = discord.MessageReference(message_id=1, channel_id=int(GENERAL_ID))
    with pytest.raises(discord.HTTPException) as unknown_reference:
        await general.send("reply", reference=missing)
    assert unknown_reference.value.code == 50035
    lenient = discord.MessageReference(
        message_id=1, channel_id=int(GENERAL_ID), fail_if_not_exists=False
    )
    await general.send("reply anyway", reference=lenient)
    with pytest.raises(discord.NotFound) as no_channel:
        await bot.http.send_message(1234, params=_params("hello"))
    assert no_channel.value.code == 10003
    assert [(s.content, s.reference_id) for s in fake.sent] == [("reply anyway", None)]


def _params(content: str) -> discord.http.MultipartParameters:
    return discord.http.handle_message_parameters(content=content)


async def test_files_sent_by_the_bot_are_recorded(fake: FakeDiscord, bot: Bot) -> None:
    general = _text_channel(bot, GENERAL_ID)
    await general.send("report", file=discord.File(io.BytesIO(b"a,b\n1,2\n"), "report.csv"))
    [record] = await fake.wait_sent(1)
    assert record.files == [("report.csv", b"a,b\n1,2\n")]
    assert fake.history(GENERAL_ID)[-1]["attachments"][0]["filename"] == "report.csv"


async def test_typing(fake: FakeDiscord, bot: Bot) -> None:
    await _text_channel(bot, GENERAL_ID).typing()
    assert await fake.wait_typing(1) == [GENERAL_ID]


async def test_history_after_is_oldest_first_across_pages(fake: FakeDiscord, bot: Bot) -> None:
    first = fake.post(GENERAL_ID, "message 0")
    for number in range(1, 121):
        fake.post(GENERAL_ID, f"message {number}")
    general = _text_channel(bot, GENERAL_ID)
    after = discord.Object(int(first["id"]))
    contents = [m.content async for m in general.history(after=after, limit=None)]
    assert contents == [f"message {n}" for n in range(1, 121)]
    assert len(fake.history_requests) == 2
    assert fake.history_requests[0].query["after"] == first["id"]
    newest = [m.content async for m in general.history(limit=3)]
    assert newest == ["message 120", "message 119", "message 118"]


async def test_history_by_time_cutoff(fake: FakeDiscord, bot: Bot) -> None:
    old = fake.post(GENERAL_ID, "old")
    for number in range(30):
        fake.post(GENERAL_ID, f"new {number}")
    cutoff = discord.utils.snowflake_time(int(old["id"]))
    general = _text_channel(bot, GENERAL_ID)
    contents = [m.content async for m in general.history(after=cutoff, limit=None)]
    expected = [
        m["content"]
        for m in fake.history(GENERAL_ID)
        if discord.utils.snowflake_time(int(m["id"])) > cutoff
    ]
    assert contents == expected
    assert "old" not in contents


# -- application commands and interactions ----------------------------------------------------


def _register_ask(bot: Bot, body: Callable[[discord.Interaction, str], Any]) -> None:
    @bot.tree.command(name="ask", description="Ask the agent")
    async def ask(interaction: discord.Interaction, question: str) -> None:
        await body(interaction, question)


async def test_slash_command_defer_then_followup(fake: FakeDiscord, bot: Bot) -> None:
    async def answer(interaction: discord.Interaction, question: str) -> None:
        await interaction.response.defer()
        await interaction.followup.send(f"answer to {question}")

    _register_ask(bot, answer)
    synced = await bot.tree.sync()
    commands = await fake.wait_commands()
    assert [c["name"] for c in commands] == ["ask"] == [c.name for c in synced]
    interaction = fake.slash("ask", {"question": "why"})
    [record] = await fake.wait_sent(1)
    assert (record.content, record.via) == ("answer to why", "followup")
    assert record.interaction_id == interaction["id"]
    [response] = fake.responses
    assert response.type == 5
    assert response.seconds_after_dispatch < 3


async def test_slash_command_immediate_reply_in_dm(fake: FakeDiscord, bot: Bot) -> None:
    users: list[discord.abc.User] = []

    async def answer(interaction: discord.Interaction, question: str) -> None:
        users.append(interaction.user)
        await interaction.response.send_message(f"quick: {question}")

    _register_ask(bot, answer)
    await bot.tree.sync()
    interaction = fake.slash("ask", {"question": "hi"}, dm=True)
    [record] = await fake.wait_sent(1)
    assert (record.content, record.via) == ("quick: hi", "interaction")
    assert record.channel_id == fake.dm_channel(DEFAULT_USER)["id"]
    assert [u.name for u in users] == ["ada"]
    url = f"{fake.api_base}/interactions/{interaction['id']}/{interaction['token']}/callback"
    async with httpx.AsyncClient() as client:
        again = await client.post(url, json={"type": 4, "data": {"content": "twice"}})
    assert (again.status_code, again.json()["code"]) == (400, 40060)


async def test_guild_interaction_user_is_member_with_roles(fake: FakeDiscord, bot: Bot) -> None:
    role = fake.add_role("admins")
    fake.set_roles(DEFAULT_USER["id"], [role["id"]])
    roles: list[str] = []

    async def answer(interaction: discord.Interaction, question: str) -> None:
        assert isinstance(interaction.user, discord.Member)
        roles.extend(r.name for r in interaction.user.roles)
        await interaction.response.send_message("ok")

    _register_ask(bot, answer)
    await bot.tree.sync()
    fake.slash("ask", {"question": "x"})
    await fake.wait_sent(1)
    assert roles == ["@everyone", "admins"]


async def test_late_interaction_callback_is_unknown(fake: FakeDiscord, bot: Bot) -> None:
    fake.interaction_deadline = 0.0  # every callback is "more than 3 s" late
    codes: list[int] = []
    done = asyncio.Event()

    async def answer(interaction: discord.Interaction, question: str) -> None:
        try:
            await interaction.response.send_message("too late")
        except discord.NotFound as error:
            codes.append(error.code)
        done.set()

    _register_ask(bot, answer)
    await bot.tree.sync()
    fake.slash("ask", {"question": "slow"})
    await asyncio.wait_for(done.wait(), 10)
    assert codes == [10062]
    assert fake.responses == []
    assert fake.sent == []


# -- gateway faults ------------------------------------------------------------------------


async def test_dropped_connection_resumes_and_replays(fake: FakeDiscord, bot: Bot) -> None:
    await fake.drop_connection()
    fake.post(GENERAL_ID, "while you were away")
    await fake.wait_resumed(1)
    [message] = await bot.wait_received(1)
    assert message.content == "while you were away"
    fake.post(GENERAL_ID, "after the resume")
    await bot.wait_received(2)
    assert [m.content for m in bot.received] == ["while you were away", "after the resume"]
    assert (fake.identifies, fake.resumes) == (1, 1)
    assert fake.connected


async def test_invalidated_session_identifies_again(fake: FakeDiscord, bot: Bot) -> None:
    bot.ready_event.clear()
    fake.invalidate_sessions()
    await fake.drop_connection()
    await fake.wait_ready(2)
    await asyncio.wait_for(bot.ready_event.wait(), 10)
    assert (fake.identifies, fake.resumes) == (2, 1)
    fake.post(GENERAL_ID, "after re-identify")
    [message] = await bot.wait_received(1)
    assert message.content == "after re-identify"


async def test_deaf_socket_loses_dispatches(fake: FakeDiscord, bot: Bot) -> None:
    fake.deaf = True
    lost = fake.post(GENERAL_ID, "nobody hears this")
    fake.deaf = False
    fake.post(GENERAL_ID, "heard")
    [message] = await bot.wait_received(1)
    assert message.content == "heard"
    assert [m["id"] for m in fake.history(GENERAL_ID)][0] == lost["id"]


async def test_deaf_resets_when_its_socket_closes(fake: FakeDiscord, bot: Bot) -> None:
    fake.deaf = True
    fake.post(GENERAL_ID, "lost")
    await fake.drop_connection()
    assert not fake.deaf
    await fake.wait_resumed(1)
    fake.post(GENERAL_ID, "heard again")
    [message] = await bot.wait_received(1)
    assert message.content == "heard again"


async def test_unacked_heartbeats_make_discord_py_reconnect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with FakeDiscord(heartbeat_interval=0.1) as fake:
        _point_discord_at(fake, monkeypatch)
        async with running(Bot(heartbeat_timeout=1.0)):
            fake.ack_heartbeats = False
            await fake.wait_until(lambda: fake.resumes >= 1, what="a RESUME")
            fake.ack_heartbeats = True
            await fake.wait_resumed(1)
            assert fake.heartbeats >= 2


async def test_refused_gateway_connections_are_retried(fake: FakeDiscord, bot: Bot) -> None:
    fake.refuse_connections = True
    await fake.drop_connection()
    await fake.wait_refused(1)
    assert not fake.connected
    fake.refuse_connections = False
    await fake.wait_resumed(1)
    assert fake.connected


async def test_newer_socket_replaces_older(fake: FakeDiscord, bot: Bot) -> None:
    bot.ready_event.clear()
    async with aiohttp.ClientSession() as session, session.ws_connect(fake.gateway_url) as ws:
        hello = await ws.receive_json()
        assert hello["op"] == 10
        await ws.send_json({"op": 2, "d": {"token": DEFAULT_TOKEN, "intents": 1 << 9}})
        ready = await ws.receive_json()
        assert (ready["t"], ready["s"]) == ("READY", 1)
        # discord.py's socket was closed; its RESUME of the replaced session fails, so it
        # identifies again and in turn replaces this socket.
        await asyncio.wait_for(bot.ready_event.wait(), 10)
        frames = [await ws.receive() for _ in range(2)]
        assert frames[-1].type is aiohttp.WSMsgType.CLOSE
        assert frames[-1].data == 4000
    assert (fake.identifies, fake.resumes) == (3, 1)
    fake.post(GENERAL_ID, "back to discord.py")
    [message] = await bot.wait_received(1)
    assert message.content == "back to discord.py"


# -- REST failure injection -----------------------------------------------------------------


async def test_rate_limit_is_retried_by_discord_py(fake: FakeDiscord, bot: Bot) -> None:
    fake.fail("POST", r"/channels/\d+/messages", 429, retry_after=0.05)
    await _text_channel(bot, GENERAL_ID).send("eventually")
    posts = [r for r in fake.requests if r.method == "POST" and r.path.endswith("/messages")]
    assert len(posts) == 2
    assert [s.content for s in fake.sent] == ["eventually"]


async def test_server_error_is_retried_then_forbidden_raises(fake: FakeDiscord, bot: Bot) -> None:
    general = _text_channel(bot, GENERAL_ID)
    fake.fail("POST", r"/channels/\d+/messages", 500)
    await general.send("after one 500")
    fake.fail("POST", r"/channels/\d+/messages", 403, code=50013, message="Missing Permissions")
    with pytest.raises(discord.Forbidden) as forbidden:
        await general.send("not allowed")
    assert (forbidden.value.code, forbidden.value.text) == (50013, "Missing Permissions")
    fake.fail("POST", r"/channels/\d+/typing", 503)
    with pytest.raises(discord.DiscordServerError):
        await general.typing()
    assert [s.content for s in fake.sent] == ["after one 500"]


# -- message components ---------------------------------------------------------------------


async def test_buttons_are_kept_on_the_message_and_checked(fake: FakeDiscord, bot: Bot) -> None:
    view = discord.ui.View()
    view.add_item(discord.ui.Button(label="Yes", custom_id="/yes"))
    sent = await _text_channel(bot, GENERAL_ID).send("Sure?", view=view)
    [row] = fake.history(GENERAL_ID)[-1]["components"]
    assert [(b["label"], b["custom_id"]) for b in row["components"]] == [("Yes", "/yes")]
    assert len(sent.components) == 1  # discord.py reads the row back
    too_long = discord.ui.View()
    too_long.add_item(discord.ui.Button(label="Long", custom_id="x" * 101))
    with pytest.raises(discord.HTTPException) as refused:
        await _text_channel(bot, GENERAL_ID).send("Sure?", view=too_long)
    assert refused.value.code == 50035
