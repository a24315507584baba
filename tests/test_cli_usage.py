"""Bad command lines, for every command group: usage and exit 2, never a traceback.

Most cases run the console script's entry in-process (the same ``main`` the script
calls; an exception escaping it fails the test as it would print a traceback); a few run
the real script as a subprocess.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gateway.cli import LAZY, app, main
from tests.test_cli import chatgate

BAD = [
    [],
    ["frobnicate"],
    ["--bogus"],
    ["init", "--bogus"],
    ["init", "extra"],
    ["run", "--port"],
    ["run", "--port", "x"],
    ["run", "--port", "0"],
    ["run", "--host"],
    ["run", "--config"],
    ["run", "--config", "/nonexistent/config.yaml"],
    ["chat", "--chat-id"],
    ["chat", "extra"],
    ["db"],
    ["db", "nope"],
    ["db", "upgrade", "--bogus"],
    ["db", "downgrade"],
    ["db", "history", "extra"],
    ["doctor", "--timeout", "x"],
    ["doctor", "extra"],
    ["config"],
    ["config", "show", "--bogus"],
    ["backup", "--bogus"],
    ["restore"],
    ["sessions"],
    ["sessions", "show"],
    ["sessions", "search"],
    ["sessions", "list", "--limit", "x"],
    ["sessions", "list", "--limit", "0"],
    ["status", "--bogus"],
    ["usage", "--by", "colour"],
    ["usage", "--since", "yesterday"],
    ["status", "extra"],
    ["memory"],
    ["people"],
    ["people", "show"],
    ["people", "show", "no-colon"],
    ["people", "export", "webhook:alice"],
    ["people", "forget", ":alice", "--yes"],
    ["audit"],
    ["audit", "list", "--limit", "0"],
    ["audit", "list", "--since", "yesterday-ish"],
    ["audit", "export"],
    ["memory", "approve"],
    ["memory", "reject"],
    ["memory", "nope"],
    ["skills", "view"],
    ["skills", "diff"],
    ["skills", "approve"],
    ["skills", "pin"],
    ["skills", "list", "--platform"],
    ["cron"],
    ["cron", "add"],
    ["cron", "add", "--schedule", "1h"],
    ["cron", "remove"],
    ["cron", "pause"],
    ["curator", "nope"],
    ["curator", "pin"],
    ["curator", "archive"],
    ["curator", "restore"],
    ["pairing"],
    ["pairing", "approve"],
    ["pairing", "approve", "webhook"],
    ["pairing", "revoke", "webhook"],
    ["mcp"],
    ["mcp", "nope"],
    ["mcp", "probe"],
    ["mcp", "probe", "nowhere"],
    ["mcp", "probe", "x", "--args", "{}"],
    ["mcp", "probe", "x", "--call", "t", "--args", "not json"],
    ["mcp", "list", "extra"],
]


def run_main(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["chatgate", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    out = capsys.readouterr()
    code = exited.value.code
    return code if isinstance(code, int) else 1, out.out + out.err


@pytest.mark.parametrize("args", BAD, ids=" ".join)
def test_bad_input_prints_usage_and_exits_2(
    args: list[str], home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = run_main(args, monkeypatch, capsys)

    assert code == 2, output
    assert "Traceback" not in output
    assert "Usage:" in output or "--help" in output, output


def test_every_command_group_has_a_bad_input_case() -> None:
    import typer

    root = typer.main.get_group(app)
    tried = {args[0] for args in BAD if args and not args[0].startswith("-")}

    assert set(root.list_commands(None)) | set(LAZY) <= tried  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["frobnicate"], "No such command 'frobnicate'"),
        (["run", "--port"], "'--port' requires an argument"),
        (["run", "--port", "eighty"], "Invalid value for '--port'"),
        (["sessions", "show"], "Missing argument"),
    ],
)
def test_the_console_script_shows_no_traceback(home: Path, args: list[str], message: str) -> None:
    result = chatgate(*args)

    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert len(result.stderr.splitlines()) <= 5  # usage, a hint and the error


def test_help_imports_no_heavy_library() -> None:
    probe = (
        "import sys, gateway.cli; "
        "print(' '.join(m for m in ('sqlalchemy', 'alembic', 'fastapi', 'openai', "
        "'anthropic', 'telegram', 'discord', 'apscheduler', 'pydantic') if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )

    assert loaded.stdout.strip() == ""
