"""What the background review asks the model, and how its writes are told to the chat."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from core.memory.tool import NO_CHANGE
from core.review.cadence import MEMORY, SKILLS
from core.store.records import NewMessage

_OPENING = (
    "[Background review: nobody reads this reply. You are looking back over the "
    "conversation above to decide what is worth keeping for future sessions.]"
)
_MEMORY = (
    "Memory: did the person reveal something durable about themselves (preferences, "
    "their situation, how they like answers) or did you learn a fact about the environment "
    "that future sessions need? If so, save it with the `memory` tool: target `user` for "
    "the person, `memory` for your own notes. Keep each entry to one short line, and patch "
    "an existing entry instead of adding a near-duplicate."
)
_SKILLS = (
    "Skills: did you work out a procedure that took several steps, trial and error or a "
    "correction from the person, and that would save effort next time? If so, check "
    "`skills_list`, then save it with `skill_manage`: patch the closest existing skill, or "
    "create a new one whose description says in under 60 characters when to use it."
)
_CLOSING = (
    "Only save what will still be true and useful later; do not save this conversation's "
    "small talk or anything secret. If nothing qualifies, answer exactly: Nothing to save."
)
REFUSAL = "the background review may only use the memory and skill tools"

_MEMORY_VERBS = {
    "add": "added an entry to",
    "replace": "updated an entry in",
    "patch": "updated an entry in",
    "remove": "removed an entry from",
}
_WHERE = {"memory": "the agent's notes", "user": "the user profile"}


def instruction(kinds: Sequence[str]) -> str:
    parts = [_OPENING]
    if MEMORY in kinds:
        parts.append(_MEMORY)
    if SKILLS in kinds:
        parts.append(_SKILLS)
    parts.append(_CLOSING)
    return "\n\n".join(parts)


def changes(messages: Sequence[NewMessage]) -> list[str]:
    """One line per write the review made that changed something on disk (or was staged)."""
    results = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
    lines: list[str] = []
    for message in messages:
        for call in message.tool_calls or ():
            payload = _json(results.get(call["id"]))
            if payload.get("success") is not True:
                continue
            args = _json(call.get("arguments"))
            if call["name"] == "memory":
                lines.extend(_memory_change(args, payload))
            elif call["name"] == "skill_manage":
                lines.extend(_skill_changes(payload))
    return lines


def notice(lines: Sequence[str]) -> str:
    memory = [line for line in lines if line.startswith("memory:")]
    skills = [line for line in lines if line.startswith("skills:")]
    parts = []
    if memory:
        parts.append("Memory updated: " + "; ".join(line[8:] for line in memory) + ".")
    if skills:
        parts.append("Skills updated: " + "; ".join(line[8:] for line in skills) + ".")
    return " ".join(parts)


def _memory_change(args: dict[str, Any], payload: dict[str, Any]) -> list[str]:
    if payload.get("message") == NO_CHANGE:
        return []
    where = _WHERE.get(str(payload.get("target") or args.get("target")), "memory")
    if payload.get("staged"):
        return [f"memory: a change to {where} is waiting for approval (/memory pending)"]
    operations = args.get("operations")
    if isinstance(operations, list) and operations:
        return [f"memory: {len(operations)} changes to {where}"]
    verb = _MEMORY_VERBS.get(str(args.get("action")), "changed")
    return [f"memory: {verb} {where}"]


def _skill_changes(payload: dict[str, Any]) -> list[str]:
    if payload.get("staged"):
        return ["skills: a skill change is waiting for approval (/skills pending)"]
    lines = []
    for result in payload.get("results") or ():
        if isinstance(result, dict) and result.get("name"):
            action = str(result.get("action", "changed"))
            past = action + ("d" if action.endswith("e") else "ed")
            lines.append(f"skills: {past} {result['name']}")
    return lines


def _json(text: object) -> dict[str, Any]:
    if not isinstance(text, str):
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
