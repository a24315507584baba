"""``chatgate pairing``: who asked to talk to the bot, and letting them in or out.

An owner gets a pairing code from a stranger (the bot sent it to them in a DM) and
approves it here; codes are stored hashed, so they cannot be listed, only the people
who asked. ``/pair`` does the same from a chat.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import typer
from rich.console import Console

from core.clock import SystemClock
from core.pairing import Pairings
from core.store.db import SessionDB
from gateway.config import load_settings
from gateway.runtime import migrate

T = TypeVar("T")

pairing_app = typer.Typer(
    no_args_is_help=True, help="Pairing: let people the policy does not know talk to the bot."
)
console = Console(highlight=False)
err = Console(stderr=True, highlight=False)
Platform = Annotated[str, typer.Argument(help="the platform they wrote on, e.g. webhook")]


def _with_pairings(fn: Callable[[Pairings], Awaitable[T]]) -> T:
    settings = load_settings()

    async def go() -> T:
        await migrate(settings)
        async with SessionDB(settings.database_url) as db:
            return await fn(Pairings(db.pairing, SystemClock()))

    return asyncio.run(go())


def _known(platform: str) -> str:
    name = platform.lower()
    if name not in load_settings().platforms:
        err.print(f"no platform {platform!r} (see chatgate init for the sections)", markup=False)
        raise typer.Exit(2)
    return name


@pairing_app.command("list")
def list_(
    platform: Annotated[str, typer.Option(help="only this platform")] = "",
) -> None:
    """The requests waiting for approval, and the people let in."""
    name = _known(platform) if platform else None
    console.print(_with_pairings(lambda p: p.listing(name)), markup=False)


@pairing_app.command("approve")
def approve(
    platform: Platform, code: Annotated[str, typer.Argument(help="the code they got")]
) -> None:
    """Let in the person who got ``code`` (any case); exit 1 if no request has it."""
    name = _known(platform)
    ok, said = _with_pairings(lambda p: p.approve(name, code, approver="cli"))
    (console if ok else err).print(said, markup=False)
    if not ok:
        raise typer.Exit(1)


@pairing_app.command("revoke")
def revoke(
    platform: Platform, user_id: Annotated[str, typer.Argument(help="their user id")]
) -> None:
    """Take back a person's pairing; exit 1 if they were not paired."""
    name = _known(platform)
    ok, said = _with_pairings(lambda p: p.revoke(name, user_id))
    (console if ok else err).print(said, markup=False)
    if not ok:
        raise typer.Exit(1)
