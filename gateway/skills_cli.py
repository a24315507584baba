"""``chatgate skills``: the SKILL.md library from the shell, and why each skill is visible or not.

Visibility is judged as the gateway would judge it: the platform given (by default the
first built-in, the embedded default), the gateway's default tool set and
``skills.disabled`` from the settings.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from adapters import registry
from core.errors import SkillRefused
from core.skills.approval import ApprovalOutcome, PendingSkillWrite, SkillApprovals
from core.skills.doctor import diagnose, format_report
from core.skills.library import SKILL_FILE, Library, Skill
from core.skills.store import SkillStore
from core.skills.usage import SkillRecord, SkillUsage
from core.skills.validate import ALLOWED_FOLDERS, supporting_path
from gateway.cli_tables import add_id_column
from gateway.config import Settings, load_settings
from gateway.features.skills import SkillsSettings
from gateway.json_output import JsonFlag, emit, iso

skills_app = typer.Typer(
    no_args_is_help=True, help="Installed skills, their visibility and staged skill writes."
)
console = Console(highlight=False)
err = Console(stderr=True, highlight=False)

DEFAULT_TOOLS = ("memory", "session_search", "skills_list", "skill_view", "skill_manage")
DEFAULT_PLATFORM = registry.BUILTIN[0].name
DESCRIPTION_CHARS = 60
Platform = Annotated[str, typer.Option(help="judge visibility for this platform")]
Name = Annotated[str, typer.Argument(help="the skill's name")]
PendingId = Annotated[str, typer.Argument(help="a pending id (see chatgate skills pending)")]
Which = Annotated[str, typer.Argument(help="a pending id, or 'all'")]


def _skills_dir(settings: Settings) -> Path:
    return settings.home / "skills"


def skill_store(settings: Settings) -> SkillStore:
    """A CLI process's store of the home's skills folder (a running gateway has its own)."""
    return SkillStore(_skills_dir(settings))


def _approvals(settings: Settings) -> SkillApprovals:
    return SkillApprovals(settings.home, skill_store(settings))


def _library(settings: Settings, platform: str = DEFAULT_PLATFORM) -> Library:
    return skill_store(settings).library(
        platform, DEFAULT_TOOLS, settings.section(SkillsSettings).disabled
    )


def _find(settings: Settings, name: str) -> Skill:
    skill = _library(settings).get(name)
    if skill is None:
        err.print(f"no skill named {name!r} (see chatgate skills list)", markup=False)
        raise typer.Exit(1)
    return skill


@skills_app.command("list")
def list_skills(platform: Platform = DEFAULT_PLATFORM) -> None:
    """Every installed skill with its visibility, usage, provenance and pin."""
    settings = load_settings()
    skills = _library(settings, platform).skills
    if not skills:
        console.print(f"no skills installed in {_skills_dir(settings)}", markup=False)
        return
    records = SkillUsage(_skills_dir(settings)).all()
    table = Table()
    add_id_column(table, "name", (skill.name for skill in skills))  # what skills view takes
    for header in ("category", "status", "description", "uses/views", "by", "pinned"):
        table.add_column(header)
    for skill in skills:
        record = records.get(skill.name, SkillRecord())
        cells = (
            skill.name,
            skill.category or "",
            _status(skill),
            _cut(skill.description),
            f"{record.use_count}/{record.view_count}",
            record.created_by,
            "yes" if record.pinned else "",
        )
        # Text cells: a description like "[imessage]" is content, not rich markup.
        table.add_row(*(Text(cell) for cell in cells))
    console.print(table)


@skills_app.command("view")
def view(
    name: Name,
    file: Annotated[str, typer.Option(help="one supporting file, e.g. references/api.md")] = "",
) -> None:
    """Print SKILL.md and the list of its supporting files, or one supporting file."""
    skill = _find(load_settings(), name)
    if file:
        _print_file(skill, file)
        return
    console.print(_read(skill.path / SKILL_FILE), markup=False)
    files = _supporting_files(skill.path)
    if files:
        console.print("supporting files:\n" + "\n".join(f"  {f}" for f in files), markup=False)


@skills_app.command("pin")
def pin(name: Name) -> None:
    """Pin a skill: the curator never archives it."""
    _set_pinned(name, pinned=True)


@skills_app.command("unpin")
def unpin(name: Name) -> None:
    """Let the curator archive a skill again when it goes unused."""
    _set_pinned(name, pinned=False)


@skills_app.command("adopt")
def adopt(name: Name) -> None:
    """Hand a user-created skill to the curator (created_by becomes agent)."""
    settings = load_settings()
    skill = _find(settings, name)
    usage = SkillUsage(_skills_dir(settings))
    record = usage.get(skill.name) or SkillRecord()
    if record.created_by == "agent":
        console.print(f"{skill.name} is already curated", markup=False)
        return
    usage.adopt(skill.name)
    console.print(f"adopted {skill.name}: the curator may now refine or archive it", markup=False)


@skills_app.command("doctor")
def doctor(platform: Platform = DEFAULT_PLATFORM) -> None:
    """Explain why each installed skill is or is not visible to the model."""
    settings = load_settings()
    try:
        lines = diagnose(
            _skills_dir(settings),
            platform,
            DEFAULT_TOOLS,
            settings.section(SkillsSettings).disabled,
        )
    except OSError as exc:
        err.print(f"cannot read {_skills_dir(settings)}: {exc}", markup=False)
        raise typer.Exit(1) from None
    console.print(format_report(lines), markup=False, end="")


@skills_app.command("pending")
def pending(as_json: JsonFlag = False) -> None:
    """List staged skill writes: id, when, what they do and the skills they touch."""
    writes = _approvals(load_settings()).list()
    if as_json:
        emit([_pending_json(write) for write in writes])
        return
    if not writes:
        console.print("no skill writes are pending")
        return
    for write in writes:
        when = datetime.fromtimestamp(write.created_at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
        refused = f"\n    last refused: {write.last_refusal}" if write.last_refusal else ""
        line = f"{write.id}  {when}  {write.summary}  [{', '.join(write.skills)}]{refused}"
        console.print(line, markup=False)


def _pending_json(write: PendingSkillWrite) -> dict[str, object]:
    return {
        "id": write.id,
        "created_at": iso(write.created_at),
        "summary": write.summary,
        "skills": list(write.skills),
        "last_refusal": write.last_refusal,
    }


@skills_app.command("diff")
def diff(pending_id: PendingId) -> None:
    """Print the unified diff of one staged write; exit 1 if the id is unknown."""
    approvals = _approvals(load_settings())
    if approvals.get(pending_id) is None:
        _no_pending(pending_id)
    console.print(approvals.diff(pending_id), markup=False, end="")


@skills_app.command("approve")
def approve(which: Which) -> None:
    """Apply staged writes to the skills as they are now; exit 1 if one is refused or unknown."""
    approvals = _approvals(load_settings())
    if which.lower() == "all":
        outcomes = approvals.approve_all()
    elif approvals.get(which) is None:
        _no_pending(which)
    else:
        outcomes = [approvals.approve(which)]
    _report(outcomes)


@skills_app.command("reject")
def reject(which: Which) -> None:
    """Drop staged writes without applying them; exit 1 if the id is unknown."""
    approvals = _approvals(load_settings())
    if which.lower() == "all":
        console.print(f"rejected {approvals.reject_all()} pending skill writes")
    elif approvals.reject(which):
        console.print(f"rejected {which}", markup=False)
    else:
        _no_pending(which)


def _no_pending(pending_id: str) -> NoReturn:
    err.print(f"no pending skill write {pending_id!r} (see chatgate skills pending)", markup=False)
    raise typer.Exit(1)


def _report(outcomes: list[ApprovalOutcome]) -> None:
    if not outcomes:
        console.print("no skill writes are pending")
    for outcome in outcomes:
        out = console if outcome.ok else err
        verdict = "approved" if outcome.ok else "refused"
        out.print(f"{verdict} {outcome.id}: {outcome.message}", markup=False)
    if not all(outcome.ok for outcome in outcomes):
        raise typer.Exit(1)


def _set_pinned(name: str, *, pinned: bool) -> None:
    settings = load_settings()
    skill = _find(settings, name)
    SkillUsage(_skills_dir(settings)).set_pinned(skill.name, pinned)
    console.print(f"{'pinned' if pinned else 'unpinned'} {skill.name}", markup=False)


def _status(skill: Skill) -> str:
    if skill.hidden_reason is not None:
        return f"hidden ({skill.hidden_reason})"
    if skill.broken:
        return f"broken ({'; '.join(skill.problems)})"
    return "visible"


def _cut(text: str) -> str:
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1] + "…"


def _print_file(skill: Skill, file: str) -> None:
    try:
        target = supporting_path(skill.path, file)
    except SkillRefused as exc:
        err.print(str(exc), markup=False)
        raise typer.Exit(1) from None
    if not target.is_file():
        err.print(f"{file!r} is not a file of {skill.name}", markup=False)
        raise typer.Exit(1)
    console.print(_read(target), markup=False)


def _supporting_files(folder: Path) -> list[str]:
    return sorted(
        path.relative_to(folder).as_posix()
        for sub in ALLOWED_FOLDERS
        if (folder / sub).is_dir()
        for path in (folder / sub).rglob("*")
        if path.is_file()
    )


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")
