"""Approvals on Telegram, end to end: the real python-telegram-bot against a fake Bot API,
the fake model scripting a call that needs a yes, and the owner tapping the prompt's
inline keyboard (approve, deny, no tap until the timeout, a tap after a restart).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import DEFAULT_USER, FakeTelegram, SentMessage
from tests.gateway_server import RunningGateway, running_gateway, tool_result
from tests.test_approvals_e2e import WipeTool
from tests.test_webhook_e2e import write_config

DM = DEFAULT_USER["id"]
LANE = f"telegram:{DM}"


def configure(home: Path, *, timeout: float = 60.0) -> None:
    write_config(
        home,
        tools={"require_approval": ["wipe_*"], "approval_timeout_seconds": timeout},
        telegram={"owners": [str(DM)]},
        server={"shutdown_grace": 5},
    )


@asynccontextmanager
async def gateway(
    home: Path, tg: FakeTelegram, model: FakeOpenAIServer, tool: WipeTool
) -> AsyncIterator[RunningGateway]:
    env = {**model.gateway_env(), **tg.gateway_env(TELEGRAM_ALLOW_ALL_USERS="true")}
    env.pop("CHATGATE_TELEGRAM_BASE_FILE_URL")
    async with running_gateway(home, env, tools=[tool]) as gw:
        yield gw


async def prompted(tg: FakeTelegram, text: str) -> SentMessage:
    """The owner asks; the first message with a keyboard is the approval prompt."""
    tg.push_update(tg.private_message(text))
    await tg.wait_until(lambda: any(m.reply_markup for m in tg.sent), what="the prompt")
    return next(m for m in tg.sent if m.reply_markup)


async def idle(gw: RunningGateway) -> None:
    async with asyncio.timeout(15):
        await gw.gateway.core.until_idle(LANE)


def keyboard(approval_id: int) -> dict[str, Any]:
    return {
        "inline_keyboard": [
            [{"text": "Approve once", "callback_data": f"/approve {approval_id}"}],
            [
                {
                    "text": "Approve for this session",
                    "callback_data": f"/approve {approval_id} session",
                }
            ],
            [{"text": "Deny", "callback_data": f"/deny {approval_id}"}],
        ]
    }


def chat_texts(tg: FakeTelegram) -> list[str]:
    return [m.text for m in tg.sent_to(DM)]


async def answered(tg: FakeTelegram, text: str) -> None:
    await tg.wait_until(lambda: text in chat_texts(tg), what=f"the answer {text!r}")


async def test_the_owners_tap_approves_once_and_the_tool_runs(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/srv/old"})
    fake_openai.reply_text("The old folder is gone.")
    async with FakeTelegram() as tg, gateway(home, tg, fake_openai, tool) as gw:
        prompt = await prompted(tg, "please wipe /srv/old")
        before = list(tool.calls)
        tg.push_update(tg.tap(prompt.message, "Approve once"))
        await answered(tg, "The old folder is gone.")
        await tg.wait_until(lambda: bool(tg.markup_edits), what="the keyboard removed")
        await idle(gw)

    assert "wipe_disk" in prompt.text
    assert "/srv/old" in prompt.text
    assert prompt.reply_markup == keyboard(1)
    assert before == []
    assert tool.calls == [{"path": "/srv/old"}]
    assert tool_result(fake_openai.requests[1]) == {"wiped": "/srv/old"}
    assert "Approved by" in " ".join(chat_texts(tg))
    assert [(e.chat_id, e.message_id, e.reply_markup) for e in tg.markup_edits] == [
        (DM, prompt.message_id, None)
    ]
    assert len(tg.callback_answers) == 1


async def test_the_owners_deny_tap_keeps_the_tool_from_running(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/"})
    fake_openai.reply_text("Understood, I left everything in place.")
    async with FakeTelegram() as tg, gateway(home, tg, fake_openai, tool) as gw:
        prompt = await prompted(tg, "wipe it all")
        tg.push_update(tg.tap(prompt.message, "Deny"))
        await answered(tg, "Understood, I left everything in place.")
        await idle(gw)

    assert tool.calls == []
    result = tool_result(fake_openai.requests[1])
    assert (result["success"], result["error"]) == (False, "denied")
    assert any(t.startswith("Denied by") and "did not run" in t for t in chat_texts(tg))


async def test_no_tap_in_time_denies_with_the_timeout_wording(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home, timeout=0.3)
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/tmp"})
    fake_openai.reply_text("No one approved, so I did not wipe it.")
    async with FakeTelegram() as tg, gateway(home, tg, fake_openai, tool) as gw:
        await prompted(tg, "wipe /tmp")
        await answered(tg, "No one approved, so I did not wipe it.")
        await idle(gw)

    assert tool.calls == []
    assert tool_result(fake_openai.requests[1])["error"] == "not_approved_in_time"
    assert "Denied: no one answered in time, so wipe_disk (#1) did not run." in chat_texts(tg)


async def test_a_tap_after_a_restart_approves_and_the_turn_resumes(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/var/cache"}, text="Let me clear it.")
    async with FakeTelegram() as tg:
        async with gateway(home, tg, fake_openai, tool):
            prompt = await prompted(tg, "clear the cache")
        asked_before = len(fake_openai.requests)
        fake_openai.reply_text("The cache is cleared.")
        async with gateway(home, tg, fake_openai, tool) as gw:
            tg.push_update(tg.tap(prompt.message, "Approve once"))
            await answered(tg, "The cache is cleared.")
            await idle(gw)

    assert asked_before == 1
    assert tool.calls == [{"path": "/var/cache"}]
    assert len(fake_openai.requests) == 2  # not asked again for the call
    resumed = fake_openai.requests[1]["messages"]
    assert resumed[-2]["tool_calls"][0]["function"]["name"] == "wipe_disk"
    assert json.loads(resumed[-1]["content"]) == {"wiped": "/var/cache"}
