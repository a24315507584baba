"""``chatgate people``: what the gateway keeps about one person, exported or forgotten.

A person is ``platform:user_id`` (``webhook:alice``). ``export``
writes a zip: ``person.json`` (every area's records, as ``show --json`` prints them) and
the person's files under ``files/<area>/``. ``forget`` asks first unless ``--yes``; it
runs against the database and home of the configuration, while the gateway runs too.
"""

from __future__ import annotations

import asyncio
import json
import zipfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from core.clock import SystemClock
from core.errors import ChatgateError
from core.people.person import Person
from core.people.service import People, PersonReport
from core.store.db import SessionDB
from gateway.config import load_settings
from gateway.features.people import build_people
from gateway.json_output import JsonFlag, emit
from gateway.runtime import migrate

T = TypeVar("T")

people_app = typer.Typer(no_args_is_help=True, help="One person's data: show, export, forget.")
console = Console(highlight=False)
err = Console(stderr=True, highlight=False)
Who = Annotated[str, typer.Argument(help="platform:user_id, e.g. webhook:alice")]


def _with_people(fn: Callable[[People], Awaitable[T]]) -> T:
    settings = load_settings()

    async def go() -> T:
        await migrate(settings)
        async with SessionDB(settings.database_url) as db:
            return await fn(build_people(settings, db, SystemClock()))

    return asyncio.run(go())


def _person(text: str) -> Person:
    try:
        return Person.parse(text)
    except ChatgateError as exc:
        raise typer.BadParameter(str(exc)) from exc


def report_json(report: PersonReport) -> dict[str, Any]:
    return {"person": str(report.person), "counts": report.counts(), "areas": report.areas}


@people_app.command("show")
def show(who: Who, json_: JsonFlag = False) -> None:
    """What is stored about them, area by area (``--json``: every record)."""
    report = _with_people(lambda p: p.show(_person(who)))
    if json_:
        emit(report_json(report))
        return
    total = sum(report.counts().values())
    console.print(f"{report.person}: {total} records" + ("" if total else " (nothing stored)"))
    for name, count in report.counts().items():
        console.print(f"  {name:<16} {count}")


@people_app.command("export")
def export(
    who: Who, archive: Annotated[Path, typer.Argument(help="the zip file to write")]
) -> None:
    """Everything stored about them: person.json plus their files, in one zip."""
    person = _person(who)

    async def collect(people: People) -> tuple[PersonReport, dict[str, list[Path]]]:
        return await people.show(person), people.files(person)

    report, files = _with_people(collect)
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as out:
        document = json.dumps(report_json(report), indent=2, ensure_ascii=False, default=str)
        out.writestr("person.json", document)
        for area, paths in files.items():
            for path in paths:
                out.write(path, f"files/{area}/{path.name}")
    console.print(f"wrote {archive}: {sum(report.counts().values())} records", markup=False)


@people_app.command("forget")
def forget(
    who: Who,
    yes: Annotated[bool, typer.Option("--yes", help="do not ask first")] = False,
) -> None:
    """Delete everything stored about them, verified; it cannot be undone."""
    person = _person(who)
    if not yes and not typer.confirm(f"Delete everything stored about {person}?"):
        err.print("nothing deleted")
        raise typer.Exit(1)
    done = _with_people(lambda p: p.forget(person))
    console.print(f"forgot {person}:", markup=False)
    for name, count in done.counts.items():
        console.print(f"  {name:<16} {count}")
    if done.waiting:
        console.print(f"  {done.waiting} of their messages still wait for a turn; run it again")
    console.print(
        f"verified: nothing left to show; {len(done.probed)} words only they wrote "
        "are found by no search"
    )
