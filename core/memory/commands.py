"""``/memory``: usage of this person's memory stores, and review of staged writes.

``/memory`` shows both stores and whether write approval is on; ``/memory pending`` lists
staged writes; ``/memory approve <id|all>`` and ``/memory reject <id|all>`` decide them.
The texts are shared with ``chatgate memory``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Sequence
from datetime import UTC, datetime

from core.commands import Command, CommandHost, CommandReply, may_approve
from core.errors import PendingNotFound
from core.memory.approval import Decision, PendingWrite, PendingWrites
from core.memory.operations import Operation
from core.memory.profile import MemoryFiles
from core.memory.store import MemoryStore
from core.memory.writes import MemoryWrite, OnMemoryWrite, applied_writes
from core.store.records import InboxItem

USAGE = "Usage: /memory | /memory pending | /memory approve <id|all> | /memory reject <id|all>"
PREVIEW_CHARS = 120


def memory_commands(
    files: MemoryFiles,
    pending: PendingWrites,
    *,
    approval: bool,
    approvers: Collection[str] = (),
    on_write: OnMemoryWrite | None = None,
) -> tuple[Command, ...]:
    """The ``/memory`` command. ``approvers`` ("platform:user_id") may approve and reject;
    empty means the bot's owners. ``on_write`` hears of each entry an approval changed."""

    def run(item: InboxItem, args: str, approver: bool, approved: list[Decision]) -> str:
        verb, _, rest = args.strip().partition(" ")
        verb, rest = verb.lower(), rest.strip()
        message = item.message
        if verb == "":
            stores = files.stores_for(message.platform, message.user_id).values()
            return show_text(stores, pending, approval=approval)
        if verb == "pending" and not rest:
            return pending_text(pending.list())
        if verb in ("approve", "reject") and rest and len(rest.split()) == 1:
            if not approver:
                return (
                    "Only the operator (memory.approvers, or the platform's owners) can "
                    "approve or reject memory writes."
                )
            return decide_text(pending, verb, rest, approved)
        return USAGE

    async def memory(host: CommandHost, item: InboxItem, args: str) -> CommandReply:
        # File locks and fsync block: keep them off the event loop.
        approver = may_approve(host, item.message, approvers)
        approved: list[Decision] = []
        text = await asyncio.to_thread(run, item, args, approver, approved)
        if on_write is not None:
            for write in approved_writes(approved, ""):  # staging records no session
                await on_write(write)
        return CommandReply(text)

    summary = "memory usage; staged writes: /memory pending|approve|reject"
    return (Command("memory", summary, memory),)


def show_text(stores: Iterable[MemoryStore], pending: PendingWrites, *, approval: bool) -> str:
    lines = [store_line(store) for store in stores]
    waiting = len(pending.list())
    if approval:
        lines.append(f"Write approval: on, {_writes(waiting)} pending (/memory pending).")
    else:
        lines.append("Write approval: off (memory.write_approval); writes go to disk at once.")
        if waiting:
            lines.append(f"{_writes(waiting)} staged earlier still pending (/memory pending).")
    return "\n".join(lines)


def store_line(store: MemoryStore) -> str:
    entries = store.entries()
    used = store.usage()
    percent = used * 100 // store.limit
    return (
        f"{store.label}: {used:,}/{store.limit:,} chars ({percent}%), "
        f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'}"
    )


def pending_text(writes: Sequence[PendingWrite], command: str = "/memory") -> str:
    if not writes:
        return "No memory writes are pending."
    blocks = [f"{_writes(len(writes))} pending:"]
    blocks.extend(describe(write) for write in writes)
    blocks.append(f"Decide with {command} approve <id|all> or {command} reject <id|all>.")
    return "\n".join(blocks)


def describe(write: PendingWrite) -> str:
    """A staged write: id, target, when, one line per operation (pinned entries in full)."""
    when = datetime.fromtimestamp(write.created_at, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"{write.id}  {write.target}  {when}"]
    lines.extend(f"  {operation_line(op)}" for op in write.operations)
    if write.last_refusal:
        lines.append(f"  last approval refused: {write.last_refusal}")
    return "\n".join(lines)


def operation_line(op: Operation) -> str:
    if op.action == "add":
        return f"add: {_preview(op.content)}"
    entry = "(no pinned entry)" if op.pinned is None else repr(op.pinned)
    if op.action == "remove":
        return f"remove entry: {entry}"
    return f"patch {_preview(op.old_text)!r} -> {_preview(op.content)!r} in entry: {entry}"


def decide_text(
    pending: PendingWrites, verb: str, which: str, approved: list[Decision] | None = None
) -> str:
    """Approve or reject one id or ``all``, as a reply for the reviewer; the decisions that
    applied a write are added to ``approved``."""
    every = which.lower() == "all"
    sink: list[Decision] = [] if approved is None else approved
    try:
        if verb == "approve":
            decisions = pending.approve_all() if every else (pending.approve(which),)
            sink.extend(d for d in decisions if d.approved)
            return _approved_all(decisions) if every else decision_text(decisions[0])
        if every:
            return _rejected_all(pending.reject_all())
        return f"Rejected {pending.reject(which).id}; nothing was written."
    except PendingNotFound as exc:
        return f"No pending memory write {exc.pending_id!r}. See /memory pending."


def approved_writes(decisions: Sequence[Decision], session_id: str) -> list[MemoryWrite]:
    """Each entry the approved ``decisions`` changed, as ``memory_written`` hooks hear it."""
    return [
        write
        for d in decisions
        if d.result is not None
        for write in applied_writes(d.write.target, d.result.before, d.write.operations, session_id)
    ]


def decision_text(decision: Decision, command: str = "/memory") -> str:
    write = decision.write
    if not decision.approved:
        return (
            f"Not approved {write.id}, still pending: {decision.refusal}. "
            f"Drop it with {command} reject {write.id}."
        )
    result = decision.result
    usage = "" if result is None else f" {write.label} now {result.chars:,}/{write.limit:,} chars."
    lines = [f"Approved {write.id} ({write.target}).{usage}"]
    lines.extend(f"  replaced or removed: {entry!r}" for entry in decision.replaced)
    return "\n".join(lines)


def _approved_all(decisions: Sequence[Decision]) -> str:
    if not decisions:
        return "No memory writes are pending."
    return "\n".join(decision_text(decision) for decision in decisions)


def _rejected_all(writes: Sequence[PendingWrite]) -> str:
    if not writes:
        return "No memory writes are pending."
    return f"Rejected {_writes(len(writes))}: {', '.join(w.id for w in writes)}."


def _writes(count: int) -> str:
    return f"{count} write" if count == 1 else f"{count} writes"


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"
