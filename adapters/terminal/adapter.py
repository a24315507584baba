"""Terminal adapter: ``chatgate chat``, the quickest way to talk to the agent.

It reads lines from standard input, one turn at a time (a line waits until the
previous one's replies are printed), and prints replies as they are delivered (a file
sent with one as its name and where its stored copy is). At the
end of the input it asks the gateway to stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import io
import secrets
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from core.access import TurnedAway
from core.inbox import Inbox
from core.ledger import DeliveryLedger
from core.media.store import MediaStore
from core.messages import InboundMessage, OutboundMessage
from core.tasks import TaskSet

if TYPE_CHECKING:
    from fastapi import FastAPI

PROMPT = "you> "

Printer = Callable[[str], None]
Reader = Callable[[str], Awaitable[str | None]]


async def read_line(prompt: str) -> str | None:
    """One line from stdin without blocking the event loop; None at end of input.

    The line is read in a daemon thread, not the loop's executor: asyncio joins executor
    threads at exit, so Ctrl-C would wait for the user to press Enter. The thread reads
    the unbuffered file, whose lock a daemon thread must not hold at interpreter exit.
    """
    loop = asyncio.get_running_loop()
    line: asyncio.Future[str | None] = loop.create_future()

    def settle(value: str | None) -> None:
        if not line.done():  # cancelled by Ctrl-C meanwhile
            line.set_result(value)

    def read() -> None:
        value = _raw_line()
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            loop.call_soon_threadsafe(settle, value)

    sys.stdout.write(prompt)
    sys.stdout.flush()
    threading.Thread(target=read, name="terminal-input", daemon=True).start()
    return await line


def _raw_line() -> str | None:
    try:
        with io.FileIO(sys.stdin.fileno(), closefd=False) as raw:
            data = raw.readline()
    except (OSError, ValueError):  # stdin closed under us
        return None
    if not data:
        return None
    return data.decode("utf-8", errors="replace").rstrip("\r\n")


class TerminalAdapter:
    """See the module docstring (push delivery)."""

    name = "terminal"
    push = True
    previews = None  # replies arrive whole (``core.streaming``)
    healthy = True

    def __init__(
        self,
        *,
        chat_id: str = "local",
        printer: Printer = print,
        reader: Reader = read_line,
        on_end: Callable[[], None] = lambda: None,
        media: MediaStore | None = None,
    ) -> None:
        self._chat_id = chat_id
        self._media = media
        self._user = getpass.getuser()
        self._print = printer
        self._read = reader
        self._on_end = on_end
        self._inbox: Inbox | None = None
        self._tasks = TaskSet("terminal")

    def install(self, app: FastAPI) -> None:
        return None  # no HTTP routes

    async def start(self, inbox: Inbox, ledger: DeliveryLedger) -> None:
        self._inbox = inbox
        self._tasks.spawn(self._conversation(), name="input")

    async def stop(self) -> None:
        await self._tasks.close()
        self._inbox = None

    async def send(self, msg: OutboundMessage) -> str | None:
        if msg.text or not msg.files:
            self._print(msg.text)
        if msg.actions:  # no buttons here: the commands they stand for, to type
            self._print("  " + " | ".join(f"{a.label}: {a.command}" for a in msg.actions))
        for file in msg.files:  # the stored copy: open it from there
            where = self._media.path(file.media) if self._media is not None else file.id
            caption = f": {file.media.caption}" if file.media.caption else ""
            self._print(f"  [file] {file.name} ({file.mime}) at {where}{caption}")
        return None

    async def say(self, text: str) -> None:
        """Send one line as the user and wait until its replies have been printed."""
        if self._inbox is None:
            raise RuntimeError("the terminal adapter is not started")
        message_id = f"{time.time_ns()}-{secrets.token_hex(3)}"
        msg = InboundMessage(
            platform=self.name,
            chat_id=self._chat_id,
            user_id=self._user,
            user_name=self._user,
            text=text,
            platform_message_id=message_id,
            dedup_key=f"{self._chat_id}:{message_id}",
            received_at=time.time(),
        )
        admission = await self._inbox.accept(msg)
        if isinstance(admission, TurnedAway):  # the terminal is never gated, but say so
            self._print(admission.reply or "Not allowed to talk to this agent.")
            return
        await self._inbox.replies(admission.item)

    async def _conversation(self) -> None:
        try:
            while (line := await self._read(PROMPT)) is not None:
                if line.strip():
                    await self.say(line)
        finally:
            self._on_end()
