"""``/approve [ID] [session]`` and ``/deny [ID]``: a person decides a waiting tool call.

Both are ``immediate`` (``core.ingress``): they act while the chat's lane is busy with
the very turn that waits for them. Without an id they decide the chat's oldest pending
approval. Only owners and ``tools.approvers`` may decide; a decision made from another
chat is also told to the approval's own chat.
"""

from __future__ import annotations

from core.approvals import text
from core.approvals.service import Approvals
from core.commands import Command, CommandHandler, CommandHost, CommandReply
from core.messages import ChatTarget
from core.store.records import InboxItem

APPROVE = "approve"
DENY = "deny"


def approval_commands(approvals: Approvals) -> list[Command]:
    """The two commands, deciding through ``approvals``."""
    return [
        Command(
            APPROVE,
            "run a tool call that waits for approval: /approve [ID] [session]",
            _handler(approvals, approve=True),
            immediate=True,
        ),
        Command(
            DENY,
            "refuse a tool call that waits for approval: /deny [ID]",
            _handler(approvals, approve=False),
            immediate=True,
        ),
    ]


def _handler(approvals: Approvals, *, approve: bool) -> CommandHandler:
    async def decide(host: CommandHost, item: InboxItem, args: str) -> CommandReply:
        msg = item.message
        if not approvals.may_decide(msg.platform, msg.user_id):
            return CommandReply(text.NOT_ALLOWED)
        parsed = _parse(args, approve=approve)
        if parsed is None:
            return CommandReply(text.USAGE_APPROVE if approve else text.USAGE_DENY)
        approval_id, session = parsed
        here = ChatTarget.of(msg)
        if approval_id is None:
            waiting = await approvals.pending_in_chat(here)
            if not waiting:
                return CommandReply(text.NONE_WAITING)
            approval_id = waiting[0].id
        found = await approvals.get(approval_id)
        if found is None:
            return CommandReply(text.unknown(approval_id))
        decided = await approvals.decide(
            approval_id,
            approve=approve,
            by=msg.user_name or msg.user_id,
            scope="session" if session else "once",
            notify=found.target != here,
        )
        if decided.approval is None:
            return CommandReply(text.unknown(approval_id))
        if decided.kind == "already":
            return CommandReply(text.already(decided.approval))
        return CommandReply(text.outcome(decided.approval))

    return decide


def _parse(args: str, *, approve: bool) -> tuple[int | None, bool] | None:
    """``[ID] [session]`` (``#12`` works too) as (id, for the session), or None."""
    words = args.lower().split()
    session = approve and bool(words) and words[-1] == "session"
    if session:
        words = words[:-1]
    if not words:
        return None, session
    if len(words) > 1 or not words[0].lstrip("#").isdigit():
        return None
    return int(words[0].lstrip("#")), session
