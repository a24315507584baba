"""The terminal has no buttons: a reply's actions are printed as the commands to type."""

from __future__ import annotations

import dataclasses

from adapters.terminal.adapter import TerminalAdapter
from core.messages import OutboundMessage, ReplyAction


async def test_a_reply_with_actions_prints_the_commands_to_type() -> None:
    lines: list[str] = []
    terminal = TerminalAdapter(printer=lines.append)
    actions = (ReplyAction("Approve once", "/approve 12"), ReplyAction("Deny", "/deny 12"))
    msg = OutboundMessage(id=1, platform="terminal", chat_id="local", text="Run it?")

    await terminal.send(msg)
    await terminal.send(dataclasses.replace(msg, actions=actions))

    assert lines == ["Run it?", "Run it?", "  Approve once: /approve 12 | Deny: /deny 12"]
