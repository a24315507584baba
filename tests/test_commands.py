"""Chat command parsing: what counts as a command and what reaches the model."""

from __future__ import annotations

import pytest

from core.commands import builtin_commands, command_token


@pytest.mark.parametrize(
    ("text", "name", "args"),
    [
        ("/new", "new", ""),
        ("/reset", "new", ""),
        ("  /STATUS  ", "status", ""),
        ("/stop@chatgate_bot", "stop", ""),
        ("/help me please", "help", "me please"),
    ],
)
def test_known_commands_parse(text: str, name: str, args: str) -> None:
    parsed = builtin_commands().parse(text)
    assert parsed is not None
    assert (parsed[0].name, parsed[1]) == (name, args)


@pytest.mark.parametrize("text", ["hello", "/etc/hosts is broken", "what does /new do?", "/"])
def test_other_text_is_a_plain_message(text: str) -> None:
    assert builtin_commands().parse(text) is None


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("/frobnicate now", "frobnicate"),
        ("  /Deploy_2@chatgate_bot", "deploy_2"),
        ("/tmp", "tmp"),
        ("/usr/bin is full", None),
        ("/release-notes", None),  # not a command token; a skill may still claim it
        ("what does /new do?", None),
        ("/", None),
    ],
)
def test_command_tokens(text: str, token: str | None) -> None:
    assert command_token(text) == token


def test_help_lists_every_command_and_alias() -> None:
    text = builtin_commands().help_text()
    for name in ("/new", "/reset", "/status", "/stop", "/help"):
        assert name in text
