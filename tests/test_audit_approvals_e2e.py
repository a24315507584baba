"""Approvals and pairing in the audit ledger, driven through the webhook."""

from __future__ import annotations

from pathlib import Path

from core.audit.events import args_digest
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway
from tests.test_approvals_e2e import WipeTool, configure, decide, idle, paused_on
from tests.test_audit_e2e import audit_rows, detail


async def test_an_approval_asked_and_granted_is_audited(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    fake_openai.reply_tool_call("wipe_disk", {"path": "/srv/old"}, call_id="call_wipe")
    fake_openai.reply_text("The old folder is gone.")
    async with running_gateway(home, fake_openai.gateway_env(), tools=[WipeTool()]) as gw:
        approval = paused_on(await gw.say("please wipe /srv/old", message_id="m1"))
        await decide(gw, approval["id"], "approve")
        await idle(gw)
        url = gw.settings.database_url
    rows = await audit_rows(url)
    asked = [detail(r) for r in rows if r["event"] == "approval_requested"]
    decided = [detail(r) for r in rows if r["event"] == "approval_decided"]

    assert asked == [
        {
            "approval_id": approval["id"],
            "tool": "wipe_disk",
            "args_sha256": args_digest('{"path": "/srv/old"}'),
        }
    ]
    assert [(d["approval_id"], d["status"]) for d in decided] == [(approval["id"], "approved")]


async def test_an_approval_is_filed_under_the_turn_that_asked(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    fake_openai.reply_tool_call("wipe_disk", {"path": "/srv/old"}, call_id="call_wipe")
    fake_openai.reply_text("Not wiped.")
    async with running_gateway(home, fake_openai.gateway_env(), tools=[WipeTool()]) as gw:
        response = await gw.say("please wipe /srv/old", message_id="m1", user_id="ann")
        await decide(gw, paused_on(response)["id"], "deny")
        await idle(gw)
        url = gw.settings.database_url
    rows = await audit_rows(url)
    approval_rows = [r for r in rows if r["event"].startswith("approval_")]

    assert {(r["person"], r["session_id"]) for r in approval_rows} == {
        ("webhook:ann", response.json()["session_id"])
    }
    assert detail(approval_rows[-1])["status"] == "denied"
