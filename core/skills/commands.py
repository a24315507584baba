"""``/skills``: the skills this chat's model can see, and review of staged skill writes.

``/skills`` lists the visible skills for the chat's platform with the broken and hidden
counts; ``/skills pending``, ``/skills diff <id>``, ``/skills approve <id|all>`` and
``/skills reject <id|all>`` review batches staged under ``skills.write_approval``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime

from core.commands import Command, CommandHost, CommandReply, may_approve
from core.skills.approval import ApprovalOutcome, PendingSkillWrite, SkillApprovals
from core.skills.library import Library
from core.store.records import InboxItem

USAGE = (
    "Usage: /skills | /skills pending | /skills diff <id> | /skills approve <id|all> "
    "| /skills reject <id|all>"
)


def skill_commands(
    library_for: Callable[[str], Library],
    approvals: SkillApprovals,
    *,
    approval: bool,
    approvers: Collection[str] = (),
) -> tuple[Command, ...]:
    """The ``/skills`` command; ``library_for(platform)`` is the library the model sees.
    ``approvers`` ("platform:user_id") may approve and reject; empty means the owners."""

    def run(item: InboxItem, args: str, approver: bool) -> str:
        verb, _, rest = args.strip().partition(" ")
        verb, rest = verb.lower(), rest.strip()
        if verb == "":
            return library_text(library_for(item.message.platform), approvals, approval=approval)
        if verb == "pending" and not rest:
            return pending_text(approvals.list())
        if verb == "diff" and rest and len(rest.split()) == 1:
            return approvals.diff(rest)
        if verb in ("approve", "reject") and rest and len(rest.split()) == 1:
            if not approver:
                return (
                    "Only the operator (skills.approvers, or the platform's owners) can "
                    "approve or reject skill writes."
                )
            return decide_text(approvals, verb, rest)
        return USAGE

    async def skills(host: CommandHost, item: InboxItem, args: str) -> CommandReply:
        approver = may_approve(host, item.message, approvers)
        # File locks and fsync block: keep them off the event loop.
        return CommandReply(await asyncio.to_thread(run, item, args, approver))

    summary = "the skills you can use; staged writes: /skills pending|diff|approve|reject"
    return (Command("skills", summary, skills),)


def library_text(library: Library, approvals: SkillApprovals, *, approval: bool) -> str:
    visible = [skill for skill in library.skills if skill.visible]
    lines = [f"{len(visible)} skill{'' if len(visible) == 1 else 's'} available:"]
    for skill in visible:
        name = f"{skill.category}/{skill.name}" if skill.category else skill.name
        marker = " [broken: " + "; ".join(skill.problems) + "]" if skill.broken else ""
        lines.append(f"- {name}: {skill.description or '(no description)'}{marker}")
    broken = sum(skill.broken for skill in library.skills)
    hidden = len(library.skills) - len(visible)
    lines.append(f"Broken: {broken}. Hidden here: {hidden} (chatgate skills doctor says why).")
    waiting = len(approvals.list())
    if approval:
        lines.append(f"Write approval: on, {waiting} pending (/skills pending).")
    elif waiting:
        lines.append(f"{waiting} staged earlier still pending (/skills pending).")
    return "\n".join(lines)


def pending_text(writes: Sequence[PendingSkillWrite]) -> str:
    if not writes:
        return "No skill writes are pending."
    lines = [f"{len(writes)} skill write{'' if len(writes) == 1 else 's'} pending:"]
    for write in writes:
        when = datetime.fromtimestamp(write.created_at, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
        lines.append(f"{write.id}  {', '.join(write.skills)}  {when}  ({write.origin})")
        lines.append(f"  {write.summary}")
        if write.last_refusal:
            lines.append(f"  last approval refused: {write.last_refusal}")
    lines.append("See one with /skills diff <id>; decide with /skills approve|reject <id|all>.")
    return "\n".join(lines)


def decide_text(approvals: SkillApprovals, verb: str, which: str) -> str:
    every = which.lower() == "all"
    if not every and approvals.get(which) is None:
        return f"No pending skill write {which!r}; see /skills pending."
    if verb == "approve":
        outcomes = approvals.approve_all() if every else [approvals.approve(which)]
        if not outcomes:
            return "No skill writes are pending."
        return "\n".join(outcome_text(outcome) for outcome in outcomes)
    if every:
        return f"Rejected {approvals.reject_all()} skill write(s); nothing was written."
    if approvals.reject(which):
        return f"Rejected {which}; nothing was written."
    return f"No pending skill write {which!r}; see /skills pending."


def outcome_text(outcome: ApprovalOutcome) -> str:
    if outcome.ok:
        return f"Approved {outcome.id}: {outcome.message}."
    return f"Not approved {outcome.id}, still pending: {outcome.message}"
