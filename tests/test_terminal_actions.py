"""The terminal has no buttons: a reply's actions are printed as the commands to type, and
its files as their names and where their stored copies are."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from adapters.terminal.adapter import TerminalAdapter
from core.media.store import MediaStore
from core.messages import OutboundFile, OutboundMessage, ReplyAction


async def test_a_reply_with_actions_prints_the_commands_to_type() -> None:
    lines: list[str] = []
    terminal = TerminalAdapter(printer=lines.append)
    actions = (ReplyAction("Approve once", "/approve 12"), ReplyAction("Deny", "/deny 12"))
    msg = OutboundMessage(id=1, platform="terminal", chat_id="local", text="Run it?")

    await terminal.send(msg)
    await terminal.send(dataclasses.replace(msg, actions=actions))

    assert lines == ["Run it?", "Run it?", "  Approve once: /approve 12 | Deny: /deny 12"]


async def test_a_file_sent_with_a_reply_prints_its_name_and_where_its_copy_is(
    tmp_path: Path,
) -> None:
    lines: list[str] = []
    media = MediaStore(tmp_path / "media")
    terminal = TerminalAdapter(printer=lines.append, media=media)
    ref = await media.put(b"%PDF-1.4 ...", "application/pdf", name="q3.pdf")
    files = (OutboundFile("f1", dataclasses.replace(ref, caption="Q3")),)
    msg = OutboundMessage(id=1, platform="terminal", chat_id="local", text="", files=files)

    await terminal.send(msg)

    assert lines == [f"  [file] q3.pdf (application/pdf) at {media.path(ref)}: Q3"]
    assert media.path(ref).read_bytes() == b"%PDF-1.4 ..."
