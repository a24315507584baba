"""Approvals on Discord, end to end: the real discord.py against a fake Discord, the
fake model scripting a call that needs a yes, and the owner clicking the prompt's
buttons (approve, deny, no click until the timeout, a click after a restart); a
stranger's click decides nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.fakes.discord_rest import SentMessage
from tests.fakes.discord_server import DEFAULT_USER, GENERAL_ID, FakeDiscord, make_user
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway, tool_result
from tests.test_approvals_e2e import WipeTool
from tests.test_discord_buttons_e2e import buttons
from tests.test_webhook_e2e import write_config

OWNER = DEFAULT_USER["id"]
LANE = f"discord:{GENERAL_ID}"


def configure(home: Path, *, timeout: float = 60.0) -> None:
    write_config(
        home,
        tools={"require_approval": ["wipe_*"], "approval_timeout_seconds": timeout},
        discord={"owners": [OWNER]},
        server={"shutdown_grace": 5},
    )


@asynccontextmanager
async def gateway(
    home: Path, dc: FakeDiscord, model: FakeOpenAIServer, tool: WipeTool
) -> AsyncIterator[RunningGateway]:
    env = {**model.gateway_env(), **dc.gateway_env(DISCORD_ALLOW_ALL_USERS="true")}
    readies = dc.ready_count
    async with running_gateway(home, env, tools=[tool]) as gw:
        await dc.wait_ready(readies + 1)
        yield gw


async def prompted(dc: FakeDiscord, text: str) -> SentMessage:
    """The owner asks in #general; the first message with buttons is the prompt."""
    dc.post(GENERAL_ID, text, mention_bot=True)
    await dc.wait_until(lambda: any(m.payload.get("components") for m in dc.sent))
    return next(m for m in dc.sent if m.payload.get("components"))


def channel_texts(dc: FakeDiscord) -> list[str]:
    return [m.content for m in dc.sent if m.channel_id == GENERAL_ID]


async def answered(dc: FakeDiscord, text: str) -> None:
    await dc.wait_until(lambda: text in channel_texts(dc), what=f"the answer {text!r}")


async def idle(gw: RunningGateway) -> None:
    async with asyncio.timeout(15):
        await gw.gateway.core.until_idle(LANE)


def on_screen(dc: FakeDiscord, message_id: str) -> list[tuple[object, ...]]:
    return buttons(next(m for m in dc.history(GENERAL_ID) if m["id"] == message_id))


async def test_the_owners_click_approves_once_and_the_tool_runs(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/srv/old"})
    fake_openai.reply_text("The old folder is gone.")
    async with FakeDiscord() as dc, gateway(home, dc, fake_openai, tool) as gw:
        prompt = await prompted(dc, "please wipe /srv/old")
        before = list(tool.calls)
        dc.click(prompt.id, "Approve once")
        await answered(dc, "The old folder is gone.")
        await idle(gw)
        left = on_screen(dc, prompt.id)

    assert "wipe_disk" in prompt.content
    assert "/srv/old" in prompt.content
    assert buttons(prompt.payload) == [
        ("Approve once", "/approve 1", 3),
        ("Approve for this session", "/approve 1 session", 3),
        ("Deny", "/deny 1", 4),
    ]
    assert before == []
    assert tool.calls == [{"path": "/srv/old"}]
    assert tool_result(fake_openai.requests[1]) == {"wiped": "/srv/old"}
    assert left == []  # the buttons went with the click


async def test_the_owners_deny_click_keeps_the_tool_from_running(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/"})
    fake_openai.reply_text("Understood, I left everything in place.")
    async with FakeDiscord() as dc, gateway(home, dc, fake_openai, tool) as gw:
        prompt = await prompted(dc, "wipe it all")
        dc.click(prompt.id, "Deny")
        await answered(dc, "Understood, I left everything in place.")
        await idle(gw)

    assert tool.calls == []
    result = tool_result(fake_openai.requests[1])
    assert (result["success"], result["error"]) == (False, "denied")
    assert any(t.startswith("Denied by") and "did not run" in t for t in channel_texts(dc))


async def test_no_click_in_time_denies_with_the_timeout_wording(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home, timeout=0.3)
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/tmp"})
    fake_openai.reply_text("No one approved, so I did not wipe it.")
    async with FakeDiscord() as dc, gateway(home, dc, fake_openai, tool) as gw:
        await prompted(dc, "wipe /tmp")
        await answered(dc, "No one approved, so I did not wipe it.")
        await idle(gw)

    assert tool.calls == []
    assert tool_result(fake_openai.requests[1])["error"] == "not_approved_in_time"
    assert "Denied: no one answered in time, so wipe_disk (#1) did not run." in channel_texts(dc)


async def test_a_strangers_click_decides_nothing(home: Path, fake_openai: FakeOpenAIServer) -> None:
    configure(home)
    tool = WipeTool()
    stranger = make_user("stranger")
    fake_openai.reply_tool_call("wipe_disk", {"path": "/x"})
    fake_openai.reply_text("I did not wipe it.")
    async with FakeDiscord() as dc, gateway(home, dc, fake_openai, tool) as gw:
        prompt = await prompted(dc, "wipe /x")
        dc.click(prompt.id, "Approve once", user=stranger)
        refused = "Only the bot's owners (or people in tools.approvers) may approve or deny"
        await dc.wait_until(lambda: any(refused in t for t in channel_texts(dc)))
        ran = list(tool.calls)
        dc.post(GENERAL_ID, "/deny 1", mention_bot=True)  # the owner, typed
        await answered(dc, "I did not wipe it.")
        await idle(gw)

    assert ran == []
    assert tool.calls == []
    assert tool_result(fake_openai.requests[1])["error"] == "denied"


async def test_a_click_after_a_restart_approves_and_the_turn_resumes(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/var/cache"}, text="Let me clear it.")
    async with FakeDiscord() as dc:
        async with gateway(home, dc, fake_openai, tool):
            prompt = await prompted(dc, "clear the cache")
        fake_openai.reply_text("The cache is cleared.")
        async with gateway(home, dc, fake_openai, tool) as gw:
            dc.click(prompt.id, "Approve once")
            await answered(dc, "The cache is cleared.")
            await idle(gw)

    assert tool.calls == [{"path": "/var/cache"}]
    assert len(fake_openai.requests) == 2  # not asked again for the call
    resumed = fake_openai.requests[1]["messages"]
    assert resumed[-2]["tool_calls"][0]["function"]["name"] == "wipe_disk"
    assert tool_result(fake_openai.requests[1]) == {"wiped": "/var/cache"}
