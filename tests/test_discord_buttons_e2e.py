"""Buttons under a reply on Discord, through the real discord.py and a fake Discord.

A reply carrying ``actions`` is handed to the running adapter's ``send`` (as push
delivery would hand over a committed reply); a click on one of its buttons must come
back into the gateway as the command typed by the person who clicked.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from adapters.base import Adapter
from core.messages import OutboundMessage, ReplyAction
from tests.fakes.discord_server import DEFAULT_USER, GENERAL_ID, FakeDiscord, make_user
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import RunningGateway
from tests.test_discord_e2e import discord_gateway, rows

APPROVAL = (
    ReplyAction("Approve once", "/approve 12"),
    ReplyAction("Approve for this session", "/approve 12 session"),
    ReplyAction("Deny", "/deny 12"),
)
HELP = ReplyAction("Help", "/help")


def adapter(gw: RunningGateway) -> Adapter:
    return gw.gateway.adapters["discord"]


def reply(text: str, *actions: ReplyAction, outbox_id: int = 900_001) -> OutboundMessage:
    return OutboundMessage(
        id=outbox_id, platform="discord", chat_id=GENERAL_ID, text=text, actions=actions
    )


def buttons(message: dict[str, object]) -> list[tuple[object, ...]]:
    rows = message.get("components") or []
    assert isinstance(rows, list)
    return [(b["label"], b["custom_id"], b["style"]) for row in rows for b in row["components"]]


async def test_a_reply_with_actions_carries_one_row_of_buttons(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai) as gw:
        await adapter(gw).send(reply("Run `rm -rf build`?", *APPROVAL))
        [sent] = await dc.wait_sent(1)

    assert [row["type"] for row in sent.payload["components"]] == [1]
    assert buttons(sent.payload) == [
        ("Approve once", "/approve 12", 3),
        ("Approve for this session", "/approve 12 session", 3),
        ("Deny", "/deny 12", 4),
    ]
    assert buttons(dc.history(GENERAL_ID)[-1]) == buttons(sent.payload)


async def test_a_click_is_the_clickers_command_and_the_buttons_go(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai) as gw:
        await adapter(gw).send(reply("Need a hand?", HELP))
        [offer] = await dc.wait_sent(1)
        click = dc.click(offer.id, "Help")
        await dc.wait_until(lambda: _answers(dc, offer.id) == 1, what="the /help answer")
        await dc.wait_responses(1)
        dc.dispatch_interaction(click)  # the same event again
        dc.dm("ping")  # taken after the redelivered click
        await dc.wait_until(lambda: any(m.content == "echo: ping" for m in dc.sent))

    [ack] = dc.responses
    assert (ack.interaction_id, ack.type) == (click["id"], 7)  # the message updated
    assert buttons(next(m for m in dc.history(GENERAL_ID) if m["id"] == offer.id)) == []
    [answer] = [m for m in dc.sent if m.reference_id == offer.id]
    assert "/status" in answer.content  # the gateway answered /help
    assert answer.channel_id == GENERAL_ID
    assert _answers(dc, offer.id) == 1  # the redelivered click made no second answer
    assert len(fake_openai.requests) == 1  # the ping; the command never reached the model
    [taken] = rows(home, "SELECT user_id, chat_id FROM inbox WHERE text = '/help'")
    assert taken == {"user_id": DEFAULT_USER["id"], "chat_id": GENERAL_ID}  # the clicker


async def test_a_strangers_click_is_refused_privately_and_leaves_the_buttons(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    stranger = make_user("stranger")
    env = {"DISCORD_ALLOWED_USERS": "ada", "DISCORD_ALLOW_ALL_USERS": ""}
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai, **env) as gw:
        await adapter(gw).send(reply("Need a hand?", HELP))
        [offer] = await dc.wait_sent(1)
        dc.click(offer.id, "Help", user=stranger)
        [refusal] = await dc.wait_responses(1)
        kept = buttons(next(m for m in dc.history(GENERAL_ID) if m["id"] == offer.id))
        dc.click(offer.id, "Help")  # Ada may
        await dc.wait_until(lambda: _answers(dc, offer.id) == 1, what="the /help answer")

    assert (refusal.type, refusal.flags) == (4, 64)  # an ephemeral message
    assert "allowed" in refusal.content
    assert kept == [("Help", "/help", 1)]
    assert [r.type for r in dc.responses] == [4, 7]


async def test_a_long_reply_has_its_buttons_on_the_last_part(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    text = "\n\n".join(f"Paragraph {n}: " + "words " * 60 for n in range(12))
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai) as gw:
        await adapter(gw).send(reply(text, *APPROVAL))
        await dc.wait_until(lambda: "Paragraph 11" in "".join(m.content for m in dc.sent))
        sent = list(dc.sent)

    assert len(sent) >= 2
    assert [bool(m.payload.get("components")) for m in sent] == [False] * (len(sent) - 1) + [True]


def _answers(dc: FakeDiscord, message_id: str) -> int:
    return sum(1 for m in dc.sent if m.reference_id == message_id and m.via == "channel")


async def test_a_click_stored_slowly_is_acknowledged_first_then_the_buttons_go(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeDiscord() as dc, discord_gateway(home, dc, fake_openai) as gw:
        await adapter(gw).send(reply("Need a hand?", HELP))
        [offer] = await dc.wait_sent(1)
        # Another process holds the database's write lock: storing the click waits.
        busy = sqlite3.connect(home / "state.db", isolation_level=None)
        try:
            busy.execute("BEGIN IMMEDIATE")
            click = dc.click(offer.id, "Help")
            [ack] = await dc.wait_responses(1)
        finally:
            busy.execute("COMMIT")
            busy.close()
        await dc.wait_until(lambda: _answers(dc, offer.id) == 1, what="the /help answer")
        await dc.wait_until(lambda: any(m.interaction_id == click["id"] for m in dc.sent))

    assert (ack.type, ack.seconds_after_dispatch < 3) == (6, True)
    [edit] = [m for m in dc.sent if m.interaction_id == click["id"]]
    assert (edit.id, edit.via, edit.payload["components"]) == (offer.id, "edit", [])
    assert buttons(next(m for m in dc.history(GENERAL_ID) if m["id"] == offer.id)) == []
