"""``chatgate memory``: the memory stores and their staged writes, from the shell."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from core.errors import PendingNotFound
from core.memory.approval import Decision, PendingWrite, PendingWrites
from core.memory.commands import decision_text, pending_text, store_line
from core.memory.operations import DELIMITER
from core.memory.profile import MemoryFiles
from core.memory.store import MemoryStore
from gateway.config import Settings, load_settings
from gateway.features.memory import MemorySettings
from gateway.json_output import JsonFlag, emit, iso

memory_app = typer.Typer(no_args_is_help=True, help="Memory stores and staged writes.")
console = Console(highlight=False)
err = Console(stderr=True, highlight=False)

CLI = "chatgate memory"
Which = Annotated[str, typer.Argument(help="a pending id, or 'all'")]


def _pending(settings: Settings) -> PendingWrites:
    return PendingWrites(settings.home)


@memory_app.command("show")
def show(
    user: Annotated[
        str, typer.Option(help="PLATFORM:USER_ID whose USER.md to show (memory.user_scope)")
    ] = "",
) -> None:
    """Both stores: usage and entries, and whether write approval is on."""
    settings = load_settings()
    platform, _, user_id = user.partition(":")
    if user and not (platform and user_id):
        err.print("--user must look like PLATFORM:USER_ID, e.g. webhook:alice")
        raise typer.Exit(2)
    memory = settings.section(MemorySettings)
    files = MemoryFiles(settings.home, memory.limits())
    stores = files.stores_for(platform, user_id)
    if memory.user_scope == "per_user" and not user:
        del stores["user"]
        console.print("USER.md is kept per person here: pass --user PLATFORM:USER_ID.\n")
    for store in stores.values():
        _print_store(store)
    state = "on" if memory.write_approval else "off"
    waiting = len(_pending(settings).list())
    console.print(f"write approval: {state}; pending writes: {waiting}")


@memory_app.command("pending")
def pending(as_json: JsonFlag = False) -> None:
    """List staged writes with the entries their patches and removes target."""
    writes = _pending(load_settings()).list()
    if as_json:
        emit([_pending_json(write) for write in writes])
        return
    console.print(pending_text(writes, CLI), markup=False)


def _pending_json(write: PendingWrite) -> dict[str, object]:
    operations = [
        {"action": op.action, "content": op.content, "old_text": op.old_text, "entry": op.pinned}
        for op in write.operations
    ]
    return {
        "id": write.id,
        "target": write.target,
        "created_at": iso(write.created_at),
        "operations": operations,
        "last_refusal": write.last_refusal,
    }


@memory_app.command("approve")
def approve(which: Which) -> None:
    """Apply staged writes to the files as they are now; exit 1 if one is refused or unknown."""
    writes = _pending(load_settings())
    try:
        decisions = writes.approve_all() if which.lower() == "all" else (writes.approve(which),)
    except PendingNotFound as exc:
        err.print(f"no pending memory write {exc.pending_id!r} (see chatgate memory pending)")
        raise typer.Exit(1) from None
    _report(decisions)


@memory_app.command("reject")
def reject(which: Which) -> None:
    """Drop staged writes without applying them; exit 1 if the id is unknown."""
    writes = _pending(load_settings())
    try:
        rejected = writes.reject_all() if which.lower() == "all" else (writes.reject(which),)
    except PendingNotFound as exc:
        err.print(f"no pending memory write {exc.pending_id!r} (see chatgate memory pending)")
        raise typer.Exit(1) from None
    for write in rejected:
        console.print(f"rejected {write.id}")
    if not rejected:
        console.print("no memory writes are pending")


def _print_store(store: MemoryStore) -> None:
    console.print(f"{store_line(store)}  [{store.path}]", markup=False)
    entries = store.entries()
    if entries:
        console.print(DELIMITER.join(entries), markup=False)
    console.print()


def _report(decisions: tuple[Decision, ...]) -> None:
    if not decisions:
        console.print("no memory writes are pending")
    for decision in decisions:
        out = console if decision.approved else err
        out.print(decision_text(decision, CLI), markup=False)
    if not all(d.approved for d in decisions):
        raise typer.Exit(1)
