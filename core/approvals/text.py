"""What people and the model read about an approval: the prompt, outcomes, refusals."""

from __future__ import annotations

import json

from core.messages import ReplyAction
from core.store.records import Approval

# The arguments shown in a prompt: enough to recognise the call, never a wall of text.
SUMMARY_MAX = 300
NOT_ALLOWED = "Only the bot's owners (or people in tools.approvers) may approve or deny tool calls."
NONE_WAITING = "Nothing in this chat is waiting for approval."
USAGE_APPROVE = "Usage: /approve [ID] [session]"
USAGE_DENY = "Usage: /deny [ID]"


def summary(arguments: str) -> str:
    """The call's arguments on one line, capped at ``SUMMARY_MAX`` characters."""
    try:
        text = json.dumps(json.loads(arguments or "{}"), ensure_ascii=False, separators=(",", ":"))
    except json.JSONDecodeError:
        text = arguments
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_MAX else text[: SUMMARY_MAX - 1] + "…"


def prompt(approval_id: int, tool: str, arguments: str) -> tuple[str, list[ReplyAction]]:
    """The message that asks, and its buttons (their commands are the typed ones)."""
    text = (
        f"Approval needed (#{approval_id}): the agent wants to run {tool} with "
        f"{summary(arguments)}\n"
        f"Reply /approve {approval_id} to allow it once, /approve {approval_id} session to "
        f"allow {tool} for the rest of this session, or /deny {approval_id}."
    )
    actions = [
        ReplyAction("Approve once", f"/approve {approval_id}"),
        ReplyAction("Approve for this session", f"/approve {approval_id} session"),
        ReplyAction("Deny", f"/deny {approval_id}"),
    ]
    return text, actions


def outcome(approval: Approval) -> str:
    """One line saying how ``approval`` was decided."""
    ref = f"{approval.tool_name} (#{approval.id})"
    by = approval.decided_by or "someone"
    if approval.status == "approved" and approval.scope == "session":
        return f"Approved by {by} for this session: {ref} runs now and is not asked again."
    if approval.status == "approved":
        return f"Approved by {by}: {ref} runs now."
    if approval.status == "denied":
        return f"Denied by {by}: {ref} did not run."
    if approval.status == "expired":
        return f"Denied: no one answered in time, so {ref} did not run."
    return f"{ref} is waiting for approval."


def already(approval: Approval) -> str:
    return f"Approval #{approval.id} was already decided. {outcome(approval)}"


def unknown(approval_id: int) -> str:
    return f"There is no approval #{approval_id}."


def tool_result(approval: Approval, timeout_seconds: float) -> str:
    """What the model reads instead of the result of a call that did not run."""
    if approval.status == "expired":
        error = "not_approved_in_time"
        message = (
            f"No one approved this call within {timeout_seconds:g} seconds, so "
            f"{approval.tool_name} did not run. Tell the person, and do not retry it unasked."
        )
    else:
        error = "denied"
        message = (
            f"The person denied this call, so {approval.tool_name} did not run. "
            "Do not retry it; answer without it."
        )
    return json.dumps({"success": False, "error": error, "message": message})
