"""What a person reads in an approval prompt: the tool, a short summary of its arguments,
the id and the typed commands."""

from __future__ import annotations

import json

from core.approvals.text import SUMMARY_MAX, prompt, summary


def test_the_summary_is_one_capped_line() -> None:
    long = json.dumps({"path": "/srv", "content": "x" * 5000, "note": "a\nb"})
    shown = summary(long)
    assert len(shown) == SUMMARY_MAX
    assert shown.endswith("…")
    assert "\n" not in shown
    assert summary('{"path": "/tmp"}') == '{"path":"/tmp"}'
    assert summary("not json") == "not json"


def test_the_prompt_names_the_tool_the_id_and_the_commands() -> None:
    text, actions = prompt(7, "mcp_fs_delete", '{"path": "/etc"}')
    assert text.splitlines()[0] == (
        'Approval needed (#7): the agent wants to run mcp_fs_delete with {"path":"/etc"}'
    )
    for command in ("/approve 7", "/approve 7 session", "/deny 7"):
        assert command in text
    assert [(a.label, a.command) for a in actions] == [
        ("Approve once", "/approve 7"),
        ("Approve for this session", "/approve 7 session"),
        ("Deny", "/deny 7"),
    ]
