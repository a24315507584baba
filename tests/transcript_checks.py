"""What a provider accepts as a conversation: every tool call answered, nothing dangling."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def assert_valid_sequence(messages: Sequence[dict[str, Any]]) -> None:
    """Each assistant tool call is answered by a tool message right after it (before
    the next non-tool message), and every tool message answers such a call."""
    open_ids: set[str] = set()
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            assert message["tool_call_id"] in open_ids, f"message {index}: unasked tool result"
            open_ids.remove(message["tool_call_id"])
            continue
        assert not open_ids, f"message {index}: tool calls left unanswered: {sorted(open_ids)}"
        if role == "assistant":
            open_ids = {call["id"] for call in message.get("tool_calls") or ()}
    assert not open_ids, f"the conversation ends with unanswered tool calls: {sorted(open_ids)}"
