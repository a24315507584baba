"""Project context: the workspace's own instruction files, from one authority only.

A repository may carry HERMES.md, AGENTS.md, CLAUDE.md and Cursor rules at once, often
with conflicting commands, so exactly one kind is used; the first that has content wins:

1. ``hermes``: ``.hermes.md`` / ``HERMES.md``, the nearest one from the workspace up to
   the git root (a folder holding ``.git``, directory or file).
2. ``agents``: the AGENTS chain. In each folder from the git root down to the workspace,
   the first non-empty readable file of ``AGENTS.override.md``, ``AGENTS.md``,
   ``agents.md``; merged root first, identical contents kept once.
3. ``claude``: ``CLAUDE.md`` / ``claude.md`` in the workspace.
4. ``cursor``: ``.cursorrules``, then ``.cursor/rules/*.mdc`` in name order.

Without a git root only the workspace folder itself is looked at, so a stray file in some
parent folder never becomes project instructions.

The rendered block goes into the session's cached prompt prefix, so it is deterministic:
the same files give the same bytes. Nothing here raises for a bad file: a file that
matches a threat pattern, cannot be read, or is cut to the size limit is named in a
one-line ``[chatgate: ...]`` notice in the block instead of vanishing silently.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import field
from pathlib import Path
from typing import Literal, TextIO

from core.memory.threats import scan
from core.record import record

ContextSource = Literal["hermes", "agents", "claude", "cursor"]

DEFAULT_MAX_CHARS = 20_000

HERMES_NAMES = (".hermes.md", "HERMES.md")
AGENTS_NAMES = ("AGENTS.override.md", "AGENTS.md", "agents.md")
CLAUDE_NAMES = ("CLAUDE.md", "claude.md")
CURSORRULES_NAME = ".cursorrules"
CURSOR_RULES_DIR = Path(".cursor", "rules")

# Past these, a file's cut size is reported as a lower bound and further rule files
# are not read, so a runaway file or folder costs bounded time.
_COUNT_CEILING = 10_000_000
_MAX_RULE_FILES = 100
_CHUNK = 1 << 16

_ORIGINS: dict[ContextSource, str] = {
    "hermes": "its HERMES.md file",
    "agents": (
        "its AGENTS files (the repository root first, then each folder down to the "
        "workspace; later parts are more specific)"
    ),
    "claude": "its CLAUDE.md file",
    "cursor": "its Cursor rules",
}


@record
class ProjectContext:
    """The project-instruction block for the prompt's context tier.

    ``text`` is "" when the workspace has no project instructions; ``source`` names the
    authority that won; ``files`` lists every file the block names, in block order
    (shown, cut, blocked or unreadable; dropped duplicates are not listed).
    """

    text: str = ""
    source: ContextSource | None = None
    files: list[Path] = field(default_factory=list)


@record
class _Part:
    path: Path
    text: str = ""  # stripped, at most max_chars characters
    cut: int = 0  # characters past max_chars (a lower bound past _COUNT_CEILING)
    problem: str | None = None  # why the file is skipped instead of shown

    @property
    def usable(self) -> bool:
        return self.problem is None and bool(self.text or self.cut)


_Finder = Callable[[Path, Path | None, int], list[_Part]]


def project_context(workspace: Path, *, max_chars: int = DEFAULT_MAX_CHARS) -> ProjectContext:
    """Find and render the project instructions that apply to ``workspace``.

    ``max_chars`` caps each file's text and the sum of file text in the block; the
    header, labels and notices come on top. Never raises for missing or bad files.
    """
    if max_chars < 0:
        raise ValueError(f"max_chars must be zero or more, not {max_chars}")
    folder = _folder(workspace)
    if folder is None:
        return ProjectContext()
    root = _git_root(folder)
    for source, finder in _AUTHORITIES:
        parts = finder(folder, root, max_chars)
        if any(part.usable for part in parts):
            text = _render(source, parts, root or folder, max_chars, root is not None)
            return ProjectContext(text, source, [part.path for part in parts])
    return ProjectContext()


# -- where to look ---------------------------------------------------------------------


def _folder(workspace: Path) -> Path | None:
    try:
        folder = workspace.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop, before Python 3.13
        return None
    return folder if _is_dir(folder) else None


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _git_root(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        try:
            if (candidate / ".git").exists():
                return candidate
        except OSError:
            continue
    return None


def _ancestors(folder: Path, root: Path | None) -> list[Path]:
    """The workspace first, then each parent up to and including the git root."""
    if root is None:
        return [folder]
    chain = [folder, *folder.parents]
    return chain[: chain.index(root) + 1]


def _hermes(folder: Path, root: Path | None, cap: int) -> list[_Part]:
    parts: list[_Part] = []
    for candidate in _ancestors(folder, root):
        parts.extend(_first_usable(candidate, HERMES_NAMES, cap))
        if parts and parts[-1].usable:
            return parts
    return parts


def _agents(folder: Path, root: Path | None, cap: int) -> list[_Part]:
    parts: list[_Part] = []
    for candidate in reversed(_ancestors(folder, root)):
        parts.extend(_first_usable(candidate, AGENTS_NAMES, cap))
    return _without_duplicates(parts)


def _claude(folder: Path, root: Path | None, cap: int) -> list[_Part]:
    return _first_usable(folder, CLAUDE_NAMES, cap)


def _cursor(folder: Path, root: Path | None, cap: int) -> list[_Part]:
    parts = _first_usable(folder, (CURSORRULES_NAME,), cap)
    rules = folder / CURSOR_RULES_DIR
    names = _rule_names(rules)
    for name in names[:_MAX_RULE_FILES]:
        parts.extend(_first_usable(rules, (name,), cap))
    if len(names) > _MAX_RULE_FILES:
        skipped = len(names) - _MAX_RULE_FILES
        problem = f"only {_MAX_RULE_FILES} rule files are read; {skipped - 1:,} more follow it"
        parts.append(_Part(rules / names[_MAX_RULE_FILES], problem=problem))
    return _without_duplicates(parts)


_AUTHORITIES: tuple[tuple[ContextSource, _Finder], ...] = (
    ("hermes", _hermes),
    ("agents", _agents),
    ("claude", _claude),
    ("cursor", _cursor),
)


def _rule_names(rules: Path) -> list[str]:
    try:
        with os.scandir(rules) as entries:
            return sorted(entry.name for entry in entries if entry.name.endswith(".mdc"))
    except OSError:
        return []


def _without_duplicates(parts: list[_Part]) -> list[_Part]:
    seen: set[tuple[str, int]] = set()
    kept: list[_Part] = []
    for part in parts:
        key = (part.text, part.cut)
        if part.usable and key in seen:
            continue
        seen.add(key)
        kept.append(part)
    return kept


# -- reading ---------------------------------------------------------------------------


def _first_usable(folder: Path, names: tuple[str, ...], cap: int) -> list[_Part]:
    """The first non-empty readable file of ``names`` in ``folder``.

    Unreadable files met before it come first, so the block can say they were skipped;
    the list holds no usable part when every candidate is missing, empty or unreadable.
    """
    parts: list[_Part] = []
    for name in names:
        part = _read(folder / name, cap)
        if part is None or not (part.usable or part.problem):
            continue
        parts.append(part)
        if part.usable:
            break
    return parts


def _read(path: Path, cap: int) -> _Part | None:
    """``None`` when ``path`` is not a regular file (missing, a folder, a pipe, a loop)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None
    except OSError:
        return None
    try:
        # utf-8-sig drops a leading byte-order mark, which the threat scan would flag.
        with path.open(encoding="utf-8-sig", errors="replace") as handle:
            head = handle.read(cap)
            cut = _count_rest(handle)
    except OSError as exc:
        return _Part(path, problem=f"could not be read ({type(exc).__name__})")
    return _Part(path, head.strip(), cut)


def _count_rest(handle: TextIO) -> int:
    counted = 0
    for chunk in _chunks(handle):
        counted += len(chunk)
        if counted >= _COUNT_CEILING:
            return _COUNT_CEILING
    return counted


def _chunks(handle: TextIO) -> Iterator[str]:
    while chunk := handle.read(_CHUNK):
        yield chunk


# -- rendering -------------------------------------------------------------------------


def _render(source: ContextSource, parts: list[_Part], base: Path, cap: int, repo: bool) -> str:
    sections = [_header(source, repo)]
    budget = cap
    for part in parts:
        label = part.path.relative_to(base).as_posix()
        body, budget = _body(part, label, budget, cap)
        sections.append(f"## {label}\n\n{body}")
    return "\n\n".join(sections)


def _header(source: ContextSource, repo: bool) -> str:
    base = "repository root" if repo else "workspace folder"
    return (
        "# Project context\n\n"
        f"These are the instructions of the project in this workspace, from {_ORIGINS[source]}. "
        f"Each part is labelled with its path relative to the {base}."
    )


def _body(part: _Part, label: str, budget: int, cap: int) -> tuple[str, int]:
    """The part's text as the block shows it, and the budget left after it."""
    if part.problem is not None:
        return f"[chatgate: {label} was skipped: {part.problem}]", budget
    threat = scan(part.text)
    if threat is not None:
        return f"[chatgate: {label} was blocked: it matches threat pattern {threat!r}]", budget
    if budget == 0:
        return f"[chatgate: {label} was left out: the {cap:,}-character limit was reached]", 0
    text = part.text[:budget]
    cut = part.cut + len(part.text) - len(text)
    if cut == 0:
        return text, budget - len(text)
    return f"{text}\n\n{_cut_notice(label, cut, cap)}", budget - len(text)


def _cut_notice(label: str, cut: int, cap: int) -> str:
    amount = f"at least {cut:,}" if cut >= _COUNT_CEILING else f"{cut:,}"
    return f"[chatgate: {amount} characters of {label} were cut: the limit is {cap:,}]"
