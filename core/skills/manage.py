"""``skill_manage``: batches of skill writes that commit together or roll back together.

A batch locks every target skill (sorted by name, so two batches cannot deadlock),
snapshots each one's folder, applies the operations in order and, if any step fails,
restores every touched skill exactly as it was.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from core.errors import SkillOperationFailed, SkillRefused
from core.memory.store import write_atomically
from core.skills.links import refuse_links
from core.skills.usage import SkillUsage
from core.skills.validate import (
    SKILL_FILE,
    check_file_content,
    check_name,
    check_skill_md,
    supporting_path,
)

Operation = Mapping[str, Any]
LOCK_TIMEOUT_SECONDS = 30.0
_LOCK_FOLDER = ".locks"


def manage_skills(
    skills_dir: Path, arguments: Operation, *, on_written: Callable[[], None] | None = None
) -> dict[str, Any]:
    """The tool entry point: ``{"operations": [...]}`` or the older single-operation form."""
    if "operations" in arguments:
        operations = arguments["operations"]
        if not isinstance(operations, list):
            return _failure("operations: must be a list")
        return apply_operations(skills_dir, operations, on_written=on_written)
    return apply_operations(skills_dir, [arguments], on_written=on_written)


def apply_operations(
    skills_dir: Path,
    operations: Sequence[Operation],
    *,
    on_written: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Apply ``operations`` atomically; the payload is JSON-able (see module docstring)."""
    try:
        names = _target_names(operations)
    except SkillOperationFailed as failed:
        return _failure(str(failed))
    try:
        with locked_skills(skills_dir, names):
            results = _run_batch(skills_dir, operations, names)
    except SkillOperationFailed as failed:
        return _failure(str(failed))
    except Timeout:
        return _failure("operations: a target skill is locked by another writer; retry later")
    if on_written is not None:
        on_written()
    return {"success": True, "results": results, "message": _summary(results)}


def _failure(error: str) -> dict[str, Any]:
    return {"success": False, "error": error, "rolled_back": True}


def _summary(results: list[dict[str, Any]]) -> str:
    done = ", ".join(f"{result['action']} {result['name']}" for result in results)
    return f"applied {len(results)} operation(s): {done}"


def _target_names(operations: Sequence[Operation]) -> list[str]:
    if not operations:
        raise SkillOperationFailed(0, "none", "operations must not be empty")
    names: set[str] = set()
    for index, operation in enumerate(operations):
        try:
            names.add(_checked_target(operation, len(operations)))
        except SkillRefused as refused:
            raise SkillOperationFailed(index, _action(operation), str(refused)) from None
    return sorted(names)


def _checked_target(operation: object, batch_size: int) -> str:
    if not isinstance(operation, Mapping):
        raise SkillRefused("bad_operation", "each operation must be an object")
    action = _action(operation)
    if action not in _ACTIONS:
        raise SkillRefused("bad_action", f"unknown action; use one of {sorted(_ACTIONS)}")
    if action == "delete" and batch_size > 1:
        raise SkillRefused("delete_alone", "delete must be the only operation in its call")
    name = _text(operation, "name")
    check_name(name)
    return name


def _action(operation: object) -> str:
    action = operation.get("action") if isinstance(operation, Mapping) else None
    return action if isinstance(action, str) else "?"


def _text(operation: Operation, key: str, *, default: str | None = None) -> str:
    value = operation.get(key, default)
    if not isinstance(value, str):
        raise SkillRefused("missing_field", f"{key!r} must be a string")
    return value


@contextmanager
def locked_skills(skills_dir: Path, names: list[str]) -> Iterator[None]:
    """Hold the per-skill write locks of ``names`` (sorted), as every batch does."""
    lock_dir = skills_dir / _LOCK_FOLDER
    lock_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        for name in names:  # already sorted: a fixed order rules out deadlock
            lock = FileLock(lock_dir / f"{name}.lock", timeout=LOCK_TIMEOUT_SECONDS)
            stack.enter_context(lock)
        yield


def _run_batch(
    skills_dir: Path, operations: Sequence[Operation], names: list[str]
) -> list[dict[str, Any]]:
    _refuse_linked_skills(skills_dir, operations)
    with tempfile.TemporaryDirectory(prefix="skill-snapshot-") as temp:
        snapshot = _Snapshot(skills_dir, names, Path(temp))
        results: list[dict[str, Any]] = []
        for index, operation in enumerate(operations):
            try:
                results.append(_ACTIONS[operation["action"]](skills_dir, operation))
            except (SkillRefused, OSError, UnicodeDecodeError) as error:
                snapshot.restore()
                raise SkillOperationFailed(index, operation["action"], str(error)) from None
            except BaseException:
                snapshot.restore()
                raise
        return results


def _refuse_linked_skills(skills_dir: Path, operations: Sequence[Operation]) -> None:
    """Refuse a batch naming a skill reached through a link, before anything is copied."""
    for index, operation in enumerate(operations):
        folder = find_skill(skills_dir, operation["name"])
        try:
            if folder is not None:
                refuse_links(skills_dir, folder / SKILL_FILE)
        except SkillRefused as refused:
            raise SkillOperationFailed(index, operation["action"], str(refused)) from None


class _Snapshot:
    """Copies of every target skill folder (or the fact that it did not exist)."""

    def __init__(self, skills_dir: Path, names: list[str], temp: Path) -> None:
        self._skills_dir = skills_dir
        self._temp = temp
        self._dirs = {name: find_skill(skills_dir, name) for name in names}
        self._folders = {path for path in skills_dir.iterdir() if path.is_dir()}
        for name, skill_dir in self._dirs.items():
            if skill_dir is not None:
                shutil.copytree(skill_dir, temp / name, symlinks=True)

    def restore(self) -> None:
        for name, original in self._dirs.items():
            current = find_skill(self._skills_dir, name)
            if current is not None:
                shutil.rmtree(current)
            if original is not None:
                if original.exists():
                    shutil.rmtree(original)
                shutil.copytree(self._temp / name, original, symlinks=True)
        for folder in self._skills_dir.iterdir():
            if folder.is_dir() and folder not in self._folders and not any(folder.iterdir()):
                folder.rmdir()  # a category folder this batch created


def find_skill(skills_dir: Path, name: str) -> Path | None:
    """The folder of skill ``name``, uncategorised or in any category, if it exists."""
    direct = skills_dir / name
    if (direct / SKILL_FILE).is_file():
        return direct
    if not skills_dir.is_dir():
        return None
    for category in sorted(skills_dir.iterdir()):
        candidate = category / name
        # Dot-folders (.archive, .curator_backups) hold no live skills.
        hidden = category.name.startswith(".")
        if category.is_dir() and not hidden and (candidate / SKILL_FILE).is_file():
            return candidate
    return None


def _existing(skills_dir: Path, name: str) -> Path:
    skill_dir = find_skill(skills_dir, name)
    if skill_dir is None:
        raise SkillRefused("skill_missing", f"no skill named {name!r}")
    return skill_dir


def _result(action: str, name: str, skills_dir: Path, path: Path) -> dict[str, Any]:
    return {"action": action, "name": name, "path": path.relative_to(skills_dir).as_posix()}


def _create(skills_dir: Path, operation: Operation) -> dict[str, Any]:
    name, content = operation["name"], _text(operation, "content")
    category = operation.get("category")
    if category is not None:
        if not isinstance(category, str):
            raise SkillRefused("missing_field", "'category' must be a string")
        check_name(category, what="category")
    if find_skill(skills_dir, name) is not None:
        raise SkillRefused("skill_exists", f"a skill named {name!r} already exists")
    skill_dir = skills_dir / category / name if category else skills_dir / name
    if skill_dir.exists():
        raise SkillRefused("skill_exists", f"folder {skill_dir.name!r} already exists")
    check_skill_md(content, name)
    refuse_links(skills_dir, skill_dir)
    skill_dir.mkdir(parents=True)
    write_atomically(skill_dir / SKILL_FILE, content)
    return _result("create", name, skills_dir, skill_dir / SKILL_FILE)


def _edit(skills_dir: Path, operation: Operation) -> dict[str, Any]:
    name, content = operation["name"], _text(operation, "content")
    path = _existing(skills_dir, name) / SKILL_FILE
    check_skill_md(content, name)
    write_atomically(path, content)
    return _result("edit", name, skills_dir, path)


def _patch(skills_dir: Path, operation: Operation) -> dict[str, Any]:
    if "content" in operation and "old_string" not in operation:
        return {**_edit(skills_dir, operation), "action": "patch"}
    name = operation["name"]
    skill_dir = _existing(skills_dir, name)
    file_path = operation.get("file_path")
    is_skill_md = file_path in (None, SKILL_FILE)
    path = skill_dir / SKILL_FILE if is_skill_md else supporting_path(skill_dir, str(file_path))
    refuse_links(skills_dir, path)
    if not path.is_file():
        raise SkillRefused("file_missing", f"no file {file_path!r} in skill {name!r}")
    text, count = _replaced(path.read_text(encoding="utf-8"), operation)
    if is_skill_md:
        check_skill_md(text, name)
    else:
        check_file_content(text)
    write_atomically(path, text)
    return {**_result("patch", name, skills_dir, path), "replacements": count}


def _replaced(text: str, operation: Operation) -> tuple[str, int]:
    old, new = _text(operation, "old_string"), _text(operation, "new_string")
    if not old:
        raise SkillRefused("patch_empty", "old_string must not be empty")
    count = text.count(old)
    if count == 0:
        raise SkillRefused("patch_not_found", "old_string does not occur in the file")
    if count > 1 and operation.get("replace_all") is not True:
        raise SkillRefused(
            "patch_ambiguous",
            f"old_string occurs {count} times; add context or set replace_all",
        )
    return text.replace(old, new), count


def _delete(skills_dir: Path, operation: Operation) -> dict[str, Any]:
    name = operation["name"]
    skill_dir = _existing(skills_dir, name)
    record = SkillUsage(skills_dir).get(name)
    if record is not None and record.pinned:
        raise SkillRefused(
            "skill_pinned", f"{name!r} is pinned and cannot be deleted; a person must unpin it"
        )
    shutil.rmtree(skill_dir)
    return _result("delete", name, skills_dir, skill_dir)


def _write_file(skills_dir: Path, operation: Operation) -> dict[str, Any]:
    name = operation["name"]
    skill_dir = _existing(skills_dir, name)
    path = refuse_links(skills_dir, supporting_path(skill_dir, _text(operation, "file_path")))
    content = _text(operation, "file_content")
    check_file_content(content)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, content)
    return _result("write_file", name, skills_dir, path)


def _remove_file(skills_dir: Path, operation: Operation) -> dict[str, Any]:
    name = operation["name"]
    skill_dir = _existing(skills_dir, name)
    path = refuse_links(skills_dir, supporting_path(skill_dir, _text(operation, "file_path")))
    if not path.is_file():
        raise SkillRefused("file_missing", f"no file {operation['file_path']!r} in {name!r}")
    path.unlink()
    return _result("remove_file", name, skills_dir, path)


_ACTIONS: dict[str, Callable[[Path, Operation], dict[str, Any]]] = {
    "create": _create,
    "patch": _patch,
    "edit": _edit,
    "delete": _delete,
    "write_file": _write_file,
    "remove_file": _remove_file,
}

__all__ = ["apply_operations", "find_skill", "locked_skills", "manage_skills"]
