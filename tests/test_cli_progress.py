"""Long CLI work shows a progress bar on a terminal and stays quiet in a pipe."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

from tests.test_cli import CHATGATE, chatgate, cli_env


def on_a_terminal(*args: str) -> tuple[int, str]:
    """Run ``chatgate`` with a pseudo-terminal as stdin, stdout and stderr."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [str(CHATGATE), *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=cli_env(TERM="xterm-256color"),
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed its end of the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


def test_backup_restore_and_upgrade_show_bars_on_a_terminal(home: Path, tmp_path: Path) -> None:
    assert chatgate("db", "downgrade", "base", "--yes").returncode == 0
    archive = tmp_path / "b.tar.gz"

    upgraded, upgrade_out = on_a_terminal("db", "upgrade")
    backed_up, backup_out = on_a_terminal("backup", str(archive))

    assert upgraded == 0, upgrade_out
    assert "migrating the SessionDB" in upgrade_out
    assert backed_up == 0, backup_out
    assert "writing the archive" in backup_out
    assert "snapshot of the SessionDB" in backup_out


def test_in_a_pipe_there_is_no_bar_and_no_control_character(home: Path, tmp_path: Path) -> None:
    assert chatgate("db", "upgrade").returncode == 0
    archive = tmp_path / "b.tar.gz"

    backed_up = chatgate("backup", str(archive))
    restored = chatgate("restore", str(archive), env=cli_env(CHATGATE_HOME=str(tmp_path / "new")))

    for result in (backed_up, restored):
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        assert "\x1b" not in result.stdout
        assert len(result.stdout.splitlines()) == 1


def test_a_curator_pass_shows_a_bar_on_a_terminal_and_none_in_a_pipe(home: Path) -> None:
    status, on_tty = on_a_terminal("curator", "run", "--dry-run")
    piped = chatgate("curator", "run", "--dry-run")

    assert status == 0, on_tty
    assert "curator pass" in on_tty
    assert piped.returncode == 0, piped.stderr
    assert "curator pass" not in piped.stdout + piped.stderr
    assert "\x1b" not in piped.stdout + piped.stderr
