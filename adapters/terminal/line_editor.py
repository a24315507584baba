"""Line editing and history for ``chatgate chat`` on a terminal (prompt_toolkit).

Used only when both stdin and stdout are terminals; piped input keeps plain line
reading (``adapter.read_line``). The history file holds what the user typed, so it is
created readable by its owner only.
"""

from __future__ import annotations

import os
from pathlib import Path

from adapters.terminal.adapter import Reader

HISTORY_FILE = "chat_history"


def editing_reader(home: Path) -> Reader:
    """A reader with arrow-key editing and history kept in ``home``/chat_history.
    Ctrl-D or Ctrl-C at the prompt ends the chat at once."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory

    session: PromptSession[str] = PromptSession(history=FileHistory(_private(home)))

    async def read(prompt: str) -> str | None:
        try:
            return await session.prompt_async(prompt)
        except (EOFError, KeyboardInterrupt):
            return None

    return read


def _private(home: Path) -> str:
    path = home / HISTORY_FILE
    home.mkdir(parents=True, exist_ok=True)
    os.close(os.open(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600))
    return str(path)
