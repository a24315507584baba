"""Approvals in the chat, end to end over the webhook: the real gateway over HTTP, the
real openai client and the fake model scripting a tool call that needs a person's yes.

The turn pauses before the call; the waiting POST returns at once with ``approvals``;
an owner decides (typed ``/approve`` / ``/deny`` or the approvals route) and the turn
goes on; the timeout denies; a restart keeps the approval pending and the turn resumes
from its stored work without asking the model again.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from core.clock import ManualClock
from core.models.base import ToolSpec
from core.store.schema import approval_grants, approvals, inbox, outbox
from core.tools import ToolContext
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway, running_gateway
from tests.test_cli import chatgate
from tests.test_webhook_e2e import rows, texts, write_config
from tests.testroom_platform import RoomAdapter

Json = dict[str, Any]
OWNER = "boss"


class WipeTool:
    """A tool that needs approval (``tools.require_approval: [wipe_*]``)."""

    def __init__(self, name: str = "wipe_disk", *, destructive: bool = False) -> None:
        self.name = name
        self.destructive = destructive
        self.calls: list[Json] = []

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(
            name=self.name,
            description="Erase a folder.",
            parameters={"type": "object", "properties": {"path": {"type": "string"}}},
        )

    async def call(self, args: Json, ctx: ToolContext) -> str:
        self.calls.append(args)
        return json.dumps({"wiped": args.get("path")})


def configure(
    home: Path, *, timeout: float = 60.0, sessions: Json | None = None, **webhook: Any
) -> None:
    write_config(
        home,
        tools={"require_approval": ["wipe_*"], "approval_timeout_seconds": timeout},
        webhook={"owners": [OWNER], **webhook},
        server={"shutdown_grace": 5},
        sessions=sessions or {},
    )


async def decide(
    gw: RunningGateway, approval_id: int, decision: str, **extra: str
) -> httpx.Response:
    body = {"decision": decision, "user_id": OWNER, **extra}
    return await gw.client.post(f"/webhook/demo/approvals/{approval_id}", json=body)


async def idle(gw: RunningGateway, chat_id: str = "c1") -> None:
    """Wait (bounded) until the chat's lane has nothing running or queued."""
    async with asyncio.timeout(15):
        await gw.gateway.core.until_idle(f"webhook:{chat_id}")


async def pulled(gw: RunningGateway, chat_id: str = "c1") -> list[str]:
    response = await gw.client.get(f"/webhook/demo/chats/{chat_id}/replies")
    assert response.status_code == 200, response.text
    return [r["text"] for r in response.json()["replies"]]


def paused_on(response: httpx.Response) -> Json:
    """The one approval a waiting POST returned with (the turn paused)."""
    assert response.status_code == 200, response.text
    [approval] = response.json()["approvals"]
    return dict(approval)


def last_tool_result(request: Json) -> Json:
    last = request["messages"][-1]
    assert last["role"] == "tool"
    result: Json = json.loads(last["content"])
    return result


async def test_a_call_waits_for_approval_then_runs_once_approved(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/srv/old"}, call_id="call_wipe")
    fake_openai.reply_text("The old folder is gone.")
    async with running_gateway(home, fake_openai.gateway_env(), tools=[tool]) as gw:
        response = await gw.say("please wipe /srv/old", message_id="m1")
        approval = paused_on(response)
        assert tool.calls == []  # nothing ran before the yes
        [prompt] = texts(response)
        [stored_prompt] = await rows(gw, select(outbox.c.actions).where(outbox.c.inbox_id == 1))
        status = await gw.say("/status", message_id="m2")  # acts while the lane is busy
        retried = await gw.say("please wipe /srv/old", message_id="m1")  # a client's retry

        decided = await decide(gw, approval["id"], "approve")
        await idle(gw)
        replies = await pulled(gw)
        raw = (await gw.client.get("/webhook/demo/chats/c1/replies")).json()["replies"]
        [row] = await rows(gw, select(approvals))
        [item] = await rows(gw, select(inbox.c.status).where(inbox.c.platform_message_id == "m1"))

    assert approval["tool"] == "wipe_disk"
    assert json.loads(approval["arguments"]) == {"path": "/srv/old"}
    for named in (f"#{approval['id']}", "wipe_disk", "/srv/old", f"/deny {approval['id']}"):
        assert named in prompt
    assert f"/approve {approval['id']} session" in prompt
    assert stored_prompt.actions == [
        ["Approve once", f"/approve {approval['id']}"],
        ["Approve for this session", f"/approve {approval['id']} session"],
        ["Deny", f"/deny {approval['id']}"],
    ]
    assert any(f"Waiting for approval: #{approval['id']} wipe_disk" in t for t in texts(status))
    [pulled_prompt] = [r for r in raw if r["text"] == prompt]
    assert [a["command"] for a in pulled_prompt["actions"]] == [
        f"/approve {approval['id']}",
        f"/approve {approval['id']} session",
        f"/deny {approval['id']}",
    ]
    assert paused_on(retried) == approval
    assert texts(retried) == [prompt]
    assert decided.status_code == 200, decided.text
    assert decided.json()["status"] == "approved"
    assert tool.calls == [{"path": "/srv/old"}]
    assert last_tool_result(fake_openai.requests[1]) == {"wiped": "/srv/old"}
    assert f"Approved by {OWNER}: wipe_disk (#{approval['id']}) runs now." in replies
    assert replies[-1] == "The old folder is gone."
    assert (row.status, row.scope, row.decided_by) == ("approved", "once", OWNER)
    assert item.status == "done"


async def test_approved_for_the_session_the_next_call_is_not_asked(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/a"})
    fake_openai.reply_text("wiped a")
    fake_openai.reply_tool_call("wipe_disk", {"path": "/b"})
    fake_openai.reply_text("wiped b")
    async with running_gateway(home, fake_openai.gateway_env(), tools=[tool]) as gw:
        approval = paused_on(await gw.say("wipe /a"))
        typed = await gw.say(f"/approve {approval['id']} session", user_id=OWNER)
        await idle(gw)
        second = await gw.say("now wipe /b")
        grants = await rows(gw, select(approval_grants.c.tool_name, approval_grants.c.granted_by))
        asked = await rows(gw, select(approvals.c.id))

    assert texts(typed) == [
        f"Approved by {OWNER} for this session: wipe_disk (#{approval['id']}) runs now and "
        "is not asked again."
    ]
    assert "approvals" not in second.json()
    assert texts(second) == ["wiped b"]
    assert tool.calls == [{"path": "/a"}, {"path": "/b"}]
    assert [(g.tool_name, g.granted_by) for g in grants] == [("wipe_disk", OWNER)]
    assert len(asked) == 1


async def test_a_denied_call_does_not_run_and_the_model_answers_without_it(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    tool = WipeTool(name="erase_everything", destructive=True)  # no glob: its own mark asks
    fake_openai.reply_tool_call("erase_everything", {"path": "/"})
    fake_openai.reply_text("Understood, I left everything in place.")
    async with running_gateway(home, fake_openai.gateway_env(), tools=[tool]) as gw:
        approval = paused_on(await gw.say("erase it all"))
        denied = await gw.say("/deny", user_id=OWNER)  # no id: the chat's oldest
        await idle(gw)
        replies = await pulled(gw)
        again = await decide(gw, approval["id"], "approve")

    assert texts(denied) == [
        f"Denied by {OWNER}: erase_everything (#{approval['id']}) did not run."
    ]
    assert tool.calls == []
    result = last_tool_result(fake_openai.requests[1])
    assert (result["success"], result["error"]) == (False, "denied")
    assert replies[-1] == "Understood, I left everything in place."
    assert again.status_code == 409
    assert again.json()["error"] == f"approval {approval['id']} was already decided: denied"


async def test_no_answer_in_time_denies_and_says_so(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home, timeout=0.3)
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/tmp"})
    fake_openai.reply_text("No one approved, so I did not wipe it.")
    async with running_gateway(home, fake_openai.gateway_env(), tools=[tool]) as gw:
        approval = paused_on(await gw.say("wipe /tmp"))
        await idle(gw)
        replies = await pulled(gw)
        [row] = await rows(gw, select(approvals.c.status))

    assert tool.calls == []
    assert last_tool_result(fake_openai.requests[1])["error"] == "not_approved_in_time"
    assert (
        f"Denied: no one answered in time, so wipe_disk (#{approval['id']}) did not run." in replies
    )
    assert replies[-1] == "No one approved, so I did not wipe it."
    assert row.status == "expired"


async def test_the_wait_for_a_person_does_not_count_toward_the_turn_timeout(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    # The approval times out after 1 s, twice the turn's bound: the turn still answers.
    configure(home, timeout=1.0, sessions={"turn_timeout_seconds": 0.5})
    fake_openai.reply_tool_call("wipe_disk", {"path": "/slow"})
    fake_openai.reply_text("I did not wipe it.")
    async with running_gateway(home, fake_openai.gateway_env(), tools=[WipeTool()]) as gw:
        paused_on(await gw.say("wipe /slow"))
        await idle(gw)
        replies = await pulled(gw)

    assert replies[-1] == "I did not wipe it."
    assert not [r for r in replies if "took longer" in r]


async def test_stop_withdraws_a_waiting_approval(home: Path, fake_openai: FakeOpenAIServer) -> None:
    configure(home)
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/y"})
    async with running_gateway(home, fake_openai.gateway_env(), tools=[tool]) as gw:
        approval = paused_on(await gw.say("wipe /y"))
        stopped = await gw.say("/stop")
        await idle(gw)
        late = await decide(gw, approval["id"], "approve")
        [row] = await rows(gw, select(approvals.c.status, approvals.c.decided_by))

    assert texts(stopped) == ["Stopped."]
    assert (row.status, row.decided_by) == ("denied", "/stop")
    assert late.status_code == 409
    assert tool.calls == []


async def test_only_owners_and_approvers_decide(home: Path, fake_openai: FakeOpenAIServer) -> None:
    configure(home)
    write_config(
        home,
        tools={"require_approval": ["wipe_*"], "approvers": ["webhook:deputy"]},
        webhook={"owners": [OWNER]},
    )
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/x"})
    fake_openai.reply_text("done")
    async with running_gateway(home, fake_openai.gateway_env(), tools=[tool]) as gw:
        approval = paused_on(await gw.say("wipe /x"))
        typed = await gw.say(f"/approve {approval['id']}", user_id="u1")
        routed = await decide(gw, approval["id"], "approve", user_id="stranger")
        unknown = await decide(gw, 999, "approve")
        still = await rows(gw, select(approvals.c.status))
        deputy = await gw.say(f"/approve {approval['id']}", user_id="deputy")
        await idle(gw)

    assert texts(typed) == [
        "Only the bot's owners (or people in tools.approvers) may approve or deny tool calls."
    ]
    assert routed.status_code == 403
    assert routed.json() == {"error": "this user may not decide approvals"}
    assert unknown.status_code == 404
    assert [r.status for r in still] == ["pending"]
    assert texts(deputy) == [f"Approved by deputy: wipe_disk (#{approval['id']}) runs now."]
    assert tool.calls == [{"path": "/x"}]


async def test_approve_without_an_id_takes_the_chats_oldest(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home, sessions_per_user=True)  # two people, two sessions, one chat
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/first"})
    fake_openai.reply_tool_call("wipe_disk", {"path": "/second"})
    async with running_gateway(home, fake_openai.gateway_env(), tools=[tool]) as gw:
        first = paused_on(await gw.say("wipe /first", user_id="ann"))
        second = paused_on(await gw.say("wipe /second", user_id="bob"))
        fake_openai.reply_text("first done")
        approved = await gw.say("/approve", user_id=OWNER)
        async with asyncio.timeout(15):
            await gw.gateway.core.until_idle("webhook:c1:u=ann")
        pending = await rows(gw, select(approvals.c.id).where(approvals.c.status == "pending"))

    assert first["id"] < second["id"]
    assert texts(approved) == [f"Approved by {OWNER}: wipe_disk (#{first['id']}) runs now."]
    assert tool.calls == [{"path": "/first"}]
    assert [r.id for r in pending] == [second["id"]]


async def test_a_pending_approval_survives_a_restart_and_deciding_resumes_the_turn(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home)
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/var/cache"}, text="Let me clear it.")
    async with running_gateway(home, fake_openai.gateway_env(), tools=[tool]) as gw:
        approval = paused_on(await gw.say("clear the cache", message_id="m1"))
        started = time.monotonic()
    assert time.monotonic() - started < 5  # the paused turn did not hold the stop
    offline = chatgate("status", "--json")
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout)["approvals"] == {"pending": 1}

    fake_openai.reply_text("The cache is cleared.")
    async with running_gateway(home, fake_openai.gateway_env(), tools=[tool]) as gw:
        [row] = await rows(gw, select(approvals.c.status))
        [item] = await rows(gw, select(inbox.c.status).where(inbox.c.platform_message_id == "m1"))
        status = await gw.say("/status", user_id=OWNER)
        decided = await decide(gw, approval["id"], "approve")
        await idle(gw)
        replies = await pulled(gw)

    assert (row.status, item.status) == ("pending", "pending")
    assert any(f"#{approval['id']} wipe_disk" in t for t in texts(status))
    assert decided.status_code == 200, decided.text
    assert tool.calls == [{"path": "/var/cache"}]
    # The model was asked once before the restart and once after: not again for the call.
    assert len(fake_openai.requests) == 2
    resumed = fake_openai.requests[1]["messages"]
    assert [m["role"] for m in resumed[-3:]] == ["user", "assistant", "tool"]
    assert resumed[-2]["tool_calls"][0]["function"]["name"] == "wipe_disk"
    assert last_tool_result(fake_openai.requests[1]) == {"wiped": "/var/cache"}
    assert replies[-1] == "The cache is cleared."


@pytest.mark.usefixtures("testroom")
async def test_a_push_platform_gets_buttons_and_a_tap_approves(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    # The test room has no owners of its own: ``tools.approvers`` names its speaker.
    write_config(
        home,
        tools={"require_approval": ["wipe_*"], "approvers": ["testroom:guest"]},
        testroom={"room": "lobby"},
    )
    tool = WipeTool()
    fake_openai.reply_tool_call("wipe_disk", {"path": "/lobby"})
    fake_openai.reply_text("The lobby is clean.")
    async with running_gateway(home, fake_openai.gateway_env(), tools=[tool]) as gw:
        room = gw.gateway.adapters["testroom"]
        assert isinstance(room, RoomAdapter)
        await room.say("clean the lobby")  # returns once the turn paused
        [prompt] = room.sent
        await room.say(prompt.actions[0].command)  # the tap: "Approve once"
        async with asyncio.timeout(15):
            await gw.gateway.core.until_idle("testroom:lobby")

    assert [a.label for a in prompt.actions] == [
        "Approve once",
        "Approve for this session",
        "Deny",
    ]
    assert tool.calls == [{"path": "/lobby"}]
    assert [m.text for m in room.sent][-2:] == [
        "Approved by guest: wipe_disk (#1) runs now.",
        "The lobby is clean.",
    ]


async def test_after_a_restart_the_timeout_counts_from_when_it_was_asked(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    configure(home, timeout=300)
    tool = WipeTool()
    asked_at = 1_780_000_000.0
    fake_openai.reply_tool_call("wipe_disk", {"path": "/old"})
    env = fake_openai.gateway_env()
    async with running_gateway(home, env, tools=[tool], clock=ManualClock(asked_at)) as gw:
        approval = paused_on(await gw.say("wipe /old"))

    # Back up 10 minutes later: the 300 s have passed, so it is denied at once.
    fake_openai.reply_text("No one approved it in time.")
    later = ManualClock(asked_at + 600)
    async with running_gateway(home, env, tools=[tool], clock=later) as gw:
        await idle(gw)
        replies = await pulled(gw)
        [row] = await rows(gw, select(approvals.c.status))

    assert tool.calls == []
    assert row.status == "expired"
    assert last_tool_result(fake_openai.requests[1])["error"] == "not_approved_in_time"
    assert f"no one answered in time, so wipe_disk (#{approval['id']})" in " ".join(replies)
    assert replies[-1] == "No one approved it in time."
