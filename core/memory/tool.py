"""The `memory` tool: argument parsing, the JSON schema, and the payloads the model reads.

Payloads are plain dicts ready for ``json.dumps``. Refusals tell the model what to do next
(which entries exist, which are closest, how many chars to free); successes report usage and
never echo every entry back.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from core.errors import (
    AmbiguousMatch,
    MemoryRefused,
    NoMatch,
    OverLimit,
    ThreatDetected,
    ToolArgumentError,
)
from core.memory.approval import PendingWrite, PendingWrites
from core.memory.operations import Action, Operation
from core.memory.store import MemoryStore, Result

TARGETS = ("memory", "user")
Applied = Callable[[str, Result, tuple[Operation, ...]], None]
_ACTIONS: dict[str, Action] = {
    "add": "add",
    "patch": "patch",
    "replace": "patch",
    "remove": "remove",
}
_NEEDS: dict[Action, tuple[str, ...]] = {
    "add": ("content",),
    "patch": ("old_text", "content"),
    "remove": ("old_text",),
}
_DONE: dict[Action, str] = {
    "add": "Entry added.",
    "patch": "Entry patched.",
    "remove": "Entry removed.",
}

_OPERATION_PROPERTIES: dict[str, Any] = {
    "action": {"type": "string", "enum": ["add", "patch", "replace", "remove"]},
    "content": {"type": "string", "description": "add: the new entry. patch: the new span."},
    "old_text": {"type": "string", "description": "patch/remove: a span of one entry."},
}

MEMORY_TOOL_SCHEMA: dict[str, Any] = {
    "name": "memory",
    "description": (
        "Save durable facts across sessions. target 'memory' holds your own notes, 'user' the "
        "user's profile; both are bounded and shown in the system prompt from the next session "
        "on. add: new entry (content). patch (alias replace): replace the span old_text inside "
        "one entry with content, keeping the rest. remove: delete the entry containing "
        "old_text. Several changes to one target go in one 'operations' batch, applied all or "
        "nothing; the size limit is checked only on the batch result."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "target": {"type": "string", "enum": list(TARGETS)},
            **_OPERATION_PROPERTIES,
            "operations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        **_OPERATION_PROPERTIES,
                        "target": {"type": "string", "enum": list(TARGETS)},
                    },
                    "required": ["action"],
                },
            },
        },
        "required": ["target"],
    },
}


def memory_tool_call(
    args: Mapping[str, Any],
    stores: Mapping[str, MemoryStore],
    pending: PendingWrites | None = None,
    *,
    on_applied: Applied | None = None,
) -> dict[str, Any]:
    """Run one `memory` tool call against ``stores`` (keyed by target) and return its payload.

    With ``pending`` (write approval on) a valid write that would change the store is staged
    there instead of applied; checks and refusals are the same either way. ``on_applied``
    hears of a batch that changed the file: its target, result and operations.
    """
    try:
        target, operations = parse_arguments(args, stores)
    except ToolArgumentError as exc:
        return {"success": False, "error": f"{exc} Nothing was written."}
    store = stores[target]
    result = store.apply(operations) if pending is None else store.validate(operations)
    if result.refusal is not None:
        return refusal_payload(store, operations, result, result.refusal)
    if pending is None or not result.changed:
        if result.changed and on_applied is not None:
            on_applied(target, result, operations)
        return success_payload(target, store, operations, result)
    return staged_payload(pending.stage(target, store, operations, result.before))


def parse_arguments(
    args: Mapping[str, Any], targets: Collection[str]
) -> tuple[str, tuple[Operation, ...]]:
    """The target and operations of a call; ``ToolArgumentError`` before anything is written."""
    target = args.get("target")
    if target is None:
        raise ToolArgumentError(
            "target is required: 'memory' (your notes) or 'user' (user profile)."
        )
    if target not in TARGETS or target not in targets:
        raise ToolArgumentError(f"target must be 'memory' or 'user', not {target!r}.")
    batch = args.get("operations")
    if batch is None:
        return target, (_operation(args, target, "this call"),)
    if args.get("action") is not None:
        raise ToolArgumentError("Give either action or operations, not both.")
    if not isinstance(batch, list) or not batch:
        raise ToolArgumentError("operations must be a non-empty list of objects.")
    return target, tuple(_operation(raw, target, f"operations[{i}]") for i, raw in enumerate(batch))


def _operation(raw: object, target: str, where: str) -> Operation:
    if not isinstance(raw, Mapping):
        raise ToolArgumentError(f"{where} must be an object.")
    own_target = raw.get("target")
    if own_target is not None and own_target != target:
        raise ToolArgumentError(
            f"{where} has target {own_target!r} but the call's target is {target!r}; "
            "one call updates one store, use separate calls for both."
        )
    name = raw.get("action")
    action = _ACTIONS.get(name) if isinstance(name, str) else None
    if action is None:
        raise ToolArgumentError(
            f"{where}: action must be add, patch, replace or remove, not {name!r}."
        )
    fields = {key: _text(raw, key, where) for key in ("content", "old_text")}
    missing = [key for key in _NEEDS[action] if not fields[key]]
    if missing:
        raise ToolArgumentError(f"{where}: {name} needs {' and '.join(missing)}.")
    return Operation(action, fields["content"], fields["old_text"])


def _text(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ToolArgumentError(f"{where}: {key} must be a string.")
    return value


NO_CHANGE = "Nothing changed: the entry already exists."


def usage_text(chars: int, limit: int) -> str:
    return f"{chars:,}/{limit:,}"


def success_payload(
    target: str, store: MemoryStore, operations: Sequence[Operation], result: Result
) -> dict[str, Any]:
    if not result.changed:
        message = NO_CHANGE
    elif len(operations) == 1:
        message = f"{_DONE[operations[0].action]} It is in the prompt from the next session on."
    else:
        message = f"Applied {len(operations)} operations. They show from the next session on."
    return {
        "success": True,
        "target": target,
        "usage": usage_text(result.chars, store.limit),
        "entry_count": len(result.after),
        "message": message,
    }


def staged_payload(write: PendingWrite) -> dict[str, Any]:
    return {
        "success": True,
        "staged": True,
        "pending_id": write.id,
        "target": write.target,
        "message": "Write approval is on: the change is staged, waiting for approval by a "
        f"person (/memory approve {write.id}), and not on disk yet. Do not repeat it.",
    }


def refusal_payload(
    store: MemoryStore, operations: Sequence[Operation], result: Result, refusal: MemoryRefused
) -> dict[str, Any]:
    current = list(result.before)
    if isinstance(refusal, OverLimit):
        error = _over_limit_message(store.label, operations, refusal)
        usage = usage_text(refusal.current, refusal.limit)
        return {"success": False, "error": error, "current_entries": current, "usage": usage}
    where = "" if len(operations) == 1 else f"operations[{refusal.index}]: "
    if isinstance(refusal, NoMatch):
        return {
            "success": False,
            "error": f"{where}No entry contains old_text {refusal.old_text!r}. Copy the exact "
            "text from closest_entries or current_entries and retry.",
            "closest_entries": list(refusal.closest_entries),
            "current_entries": current,
        }
    if isinstance(refusal, AmbiguousMatch):
        return {
            "success": False,
            "error": f"{where}old_text {refusal.old_text!r} is in {len(refusal.matches)} "
            "different entries; quote more of the one you mean. Nothing was written.",
            "matching_entries": list(refusal.matches),
        }
    if isinstance(refusal, ThreatDetected):
        return {
            "success": False,
            "error": f"{where}Refused: the entry matches threat pattern '{refusal.pattern_id}'. "
            "Memory is injected into future system prompts. Nothing was written.",
            "threat": refusal.pattern_id,
        }
    return {"success": False, "error": f"{where}Refused: {refusal}. Nothing was written."}


def _over_limit_message(label: str, operations: Sequence[Operation], refusal: OverLimit) -> str:
    excess = f"{refusal.excess:,}"
    state = f"{label} at {usage_text(refusal.current, refusal.limit)} chars; "
    single = operations[0] if len(operations) == 1 else None
    if single is not None and single.action == "add":
        size = len(single.content.strip())
        change = f"adding this entry ({size:,} chars) would exceed the limit by {excess} chars."
        goal = "AND adds this entry"
    else:
        kind = "this patch" if single is not None else "this batch"
        change = (
            f"{kind} would bring it to {refusal.projected:,} chars, "
            f"exceeding the limit by {excess} chars."
        )
        goal = "AND makes this change"
    return (
        f"{state}{change} Retry as ONE 'operations' batch that removes or shortens (replace) "
        f"stale entries from current_entries below to free at least {excess} chars {goal} "
        "— the limit is checked only on the batch result."
    )
