"""The shape docs/architecture.md promises, checked on the source itself.

- no import cycle between chatgate's modules (function-level imports count);
- no platform is named in ``core/`` or ``gateway/``: platforms come from the registry;
- value records are ``@record`` (``core/record.py``), not frozen slotted dataclasses,
  which cost several times as much to build;
- no function over 60 lines and no module over 400 lines outside ``tests/``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "adapters", "gateway", "migrations")
SIZED = (*PACKAGES, "bench")
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400
PLATFORM_NAMES = re.compile(r"telegram|discord", re.IGNORECASE)


def modules(folders: tuple[str, ...]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imported(path: Path, known: dict[str, Path]) -> set[str]:
    """The chatgate modules ``path`` imports anywhere in it (a package's submodule named
    in ``from package import submodule`` counts as that submodule)."""
    edges: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            edges.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            submodules = {name for name in names if name in known}
            if submodules:
                edges.update(submodules)
            elif node.module in known:
                edges.add(node.module)
    return edges


def cyclic(graph: dict[str, set[str]]) -> list[str]:
    """Modules on an import cycle or importing one: what is left after taking away, again
    and again, every module that imports none of those left."""
    left = {name: set(targets) for name, targets in graph.items()}
    while sinks := [name for name, targets in left.items() if not targets & left.keys()]:
        for name in sinks:
            del left[name]
    return sorted(left)


def test_no_import_cycle_anywhere() -> None:
    known = modules(PACKAGES)
    graph = {name: imported(path, known) - {name} for name, path in known.items()}
    assert cyclic(graph) == []


def test_cycles_are_found_when_there_are_some() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"d", "f"}, "f": set()}
    assert cyclic(graph) == ["a", "b", "c", "d", "e"]
    assert cyclic({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("folder", ["core", "gateway"])
def test_no_platform_is_named_outside_its_package(folder: str) -> None:
    named = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / folder).rglob("*.py"))
        if PLATFORM_NAMES.search(path.read_text(encoding="utf-8"))
    ]
    assert named == []


def test_value_records_are_built_at_plain_class_speed() -> None:
    frozen_slotted = [
        str(path.relative_to(ROOT))
        for path in modules(PACKAGES).values()
        if "@dataclass(frozen=True, slots=True)" in path.read_text(encoding="utf-8")
    ]
    assert frozen_slotted == []


def functions(path: Path) -> Iterator[tuple[str, int]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            yield node.name, node.end_lineno - node.lineno + 1


def test_functions_and_modules_stay_small() -> None:
    long_functions = [
        f"{path.relative_to(ROOT)}:{name} ({lines} lines)"
        for path in modules(SIZED).values()
        for name, lines in functions(path)
        if lines > MAX_FUNCTION_LINES
    ]
    big_modules = [
        f"{path.relative_to(ROOT)} ({lines} lines)"
        for path in modules(SIZED).values()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert long_functions == []
    assert big_modules == []
