"""Storage only through ``core/store/``: no module outside it speaks SQL or holds an engine.

Every module under ``core/``, ``adapters/`` and ``gateway/`` outside ``core/store/`` is
parsed (``ast``, so comments and strings cannot fool it) and must not import SQLAlchemy,
Alembic, the migrations, the store's engines, tables or transactions, nor read an
``engines`` / ``_engines`` attribute (a SessionDB's private engines).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("core", "adapters", "gateway")
STORE = ROOT / "core" / "store"
# Modules (and their submodules) that only the store may import.
STORE_ONLY = (
    "sqlalchemy",
    "alembic",
    "migrations",
    "core.store.engine",
    "core.store.schema",
    "core.store.tx",
)
ENGINE_ATTRIBUTES = frozenset({"engines", "_engines"})


def checked_modules() -> Iterator[Path]:
    for top in CHECKED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if not path.is_relative_to(STORE):
                yield path


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(tree: ast.AST, module: str, *, package: bool) -> Iterator[tuple[int, list[str]]]:
    """Per import statement, its line and the modules it may load: relative imports
    resolved, and for ``from x import y`` both ``x`` and ``x.y`` (y may be a submodule)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield node.lineno, [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, package=package)
            yield node.lineno, [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _absolute(node: ast.ImportFrom, module: str, *, package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    keep = len(parts) - node.level + (1 if package else 0)
    return ".".join([*parts[:keep], *([node.module] if node.module else [])])


def _store_only(name: str) -> bool:
    return any(name == banned or name.startswith(banned + ".") for banned in STORE_ONLY)


def violations(source: str, module: str, *, package: bool = False) -> list[str]:
    """What in ``source`` (the text of ``module``) reaches storage around the store."""
    tree = ast.parse(source)
    found = []
    for line, names in imports(tree, module, package=package):
        banned = [name for name in names if _store_only(name)]
        if banned:
            found.append(f"line {line}: imports {banned[0]}")
    found += [
        f"line {node.lineno}: reads .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ENGINE_ATTRIBUTES
    ]
    return found


def test_no_module_outside_the_store_reaches_storage() -> None:
    paths = list(checked_modules())
    leaks = {
        str(path.relative_to(ROOT)): found
        for path in paths
        if (
            found := violations(
                path.read_text(encoding="utf-8"),
                module_name(path),
                package=path.name == "__init__.py",
            )
        )
    }
    assert len(paths) > 100  # the walk really covered the code base
    assert leaks == {}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import sqlalchemy", "line 1: imports sqlalchemy"),
        ("import os, sqlalchemy.exc", "line 1: imports sqlalchemy.exc"),
        (
            "from sqlalchemy.ext.asyncio import AsyncEngine",
            "line 1: imports sqlalchemy.ext.asyncio",
        ),
        ("from alembic import command", "line 1: imports alembic"),
        ("from migrations.runner import upgrade", "line 1: imports migrations.runner"),
        ("from core.store.engine import create_engines", "line 1: imports core.store.engine"),
        ("from core.store import engine", "line 1: imports core.store.engine"),
        ("from ..store.schema import messages", "line 1: imports core.store.schema"),
        ("def f():\n    from core.store.tx import Tx", "line 2: imports core.store.tx"),
        ("def f(db):\n    return db.engines.read", "line 2: reads .engines"),
        ("async def f(db):\n    await db._engines.dispose()", "line 2: reads ._engines"),
    ],
)
def test_the_check_catches_each_kind_of_leak(source: str, expected: str) -> None:
    assert violations(source, "core.search.tool") == [expected]


def test_relative_imports_resolve_from_a_package() -> None:
    assert violations("from ..store import tx", "core.search", package=True) == [
        "line 1: imports core.store.tx"
    ]


def test_the_check_lets_store_repositories_through() -> None:
    source = (
        "from core.store.db import SessionDB\n"
        "from core.store.search.reader import SearchStore\n"
        "async def f(db: SessionDB) -> None:\n"
        "    async with db.search.reading() as reader:\n"
        "        await reader.thread_of('s1')\n"
    )
    assert violations(source, "gateway.sessions_cli") == []
