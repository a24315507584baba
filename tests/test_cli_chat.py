"""``chatgate chat`` as a user at a terminal: Ctrl-C leaves at once, lines are remembered."""

from __future__ import annotations

import os
import pty
import select
import signal
import stat
import subprocess
import time
from pathlib import Path
from typing import IO

from tests.test_cli import CHATGATE, cli_env

DEADLINE = 60.0  # start-up runs the migrations; a shared CI host is slow
PROMPT_TIMEOUT = 10.0  # from Ctrl-C to the process having exited


class Output:
    """What a child process wrote to ``fd``, waited on with a deadline; each ``wait_for``
    looks only past what the previous one matched."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.seen = b""
        self.pos = 0

    def wait_for(self, needle: bytes, timeout: float = DEADLINE) -> None:
        deadline = time.monotonic() + timeout
        while (found := self.seen.find(needle, self.pos)) < 0:
            left = deadline - time.monotonic()
            assert left > 0, f"no {needle!r} within {timeout} s; got {self.seen[-400:]!r}"
            self.seen += self._read(left)
        self.pos = found + len(needle)

    def _read(self, left: float) -> bytes:
        ready, _, _ = select.select([self.fd], [], [], left)
        if not ready:
            return b""
        try:
            return os.read(self.fd, 4096)
        except OSError:  # the pty's other end closed
            return b""


def test_sigint_at_the_prompt_exits_at_once_while_stdin_stays_open(home: Path) -> None:
    proc = subprocess.Popen(
        [str(CHATGATE), "chat"],
        stdin=subprocess.PIPE,  # open, never written: the prompt waits for a line
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    try:
        assert proc.stdout is not None
        Output(proc.stdout.fileno()).wait_for(b"you> ")

        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=PROMPT_TIMEOUT)
    finally:
        proc.kill()
        stderr = _rest(proc.stderr)

    assert code == 130
    assert "Traceback" not in stderr


def test_chat_on_a_terminal_edits_lines_keeps_history_and_leaves_on_ctrl_c(home: Path) -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [str(CHATGATE), "chat"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=cli_env(TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1"),
        close_fds=True,
    )
    os.close(slave)
    out = Output(master)
    try:
        out.wait_for(b"you>")  # prompt_toolkit moves the cursor past the space
        os.write(master, b"hello wombat\x1b[D\x1b[D\x7f\r")  # two left arrows, a backspace
        out.wait_for(b"You said")
        out.wait_for(b"you>")

        os.write(master, b"\x03")  # Ctrl-C at the prompt
        code = proc.wait(timeout=PROMPT_TIMEOUT)
    finally:
        proc.kill()
        os.close(master)

    history = home / "chat_history"
    assert code == 0
    assert "+hello womat" in history.read_text(encoding="utf-8")  # the edited line
    assert stat.S_IMODE(history.stat().st_mode) == 0o600  # what the user typed is private


def _rest(stream: IO[bytes] | None) -> str:
    return stream.read().decode(errors="replace") if stream else ""
