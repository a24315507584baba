"""A start on a database already at this build's head skips Alembic; any other start
still migrates. The head read from the revision files is Alembic's own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from core.store.schema_version import downgrade_schema, schema_revision, upgrade_schema
from migrations import heads
from migrations.runner import head_revision

ROOT = Path(__file__).resolve().parent.parent

# Runs upgrade_schema in a fresh interpreter and says whether Alembic was imported.
PROBE = """
import asyncio, sys
from core.store.schema_version import upgrade_schema
asyncio.run(upgrade_schema(sys.argv[1]))
print("alembic imported" if "alembic" in sys.modules else "alembic not imported")
"""


def _revision_file(folder: Path, name: str, revision: str, down: str) -> None:
    text = f'"""{name}"""\nrevision: str = "{revision}"\ndown_revision = {down}\n'
    (folder / f"{name}.py").write_text(text)


def _probe(url: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, url], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_the_head_read_from_the_files_is_alembics() -> None:
    assert heads.head_revision() == head_revision()


def test_two_heads_answer_none(tmp_path: Path) -> None:
    _revision_file(tmp_path, "a", "0001", "None")
    _revision_file(tmp_path, "b", "0002", '"0001"')
    _revision_file(tmp_path, "c", "0003", '"0001"')
    assert heads.head_revision(tmp_path) is None


def test_a_merge_revision_is_the_one_head(tmp_path: Path) -> None:
    _revision_file(tmp_path, "a", "0001", "None")
    _revision_file(tmp_path, "b", "0002", '"0001"')
    _revision_file(tmp_path, "c", "0003", '"0001"')
    _revision_file(tmp_path, "d", "0004", '("0002", "0003")')
    assert heads.head_revision(tmp_path) == "0004"


def test_a_revision_that_is_not_a_literal_answers_none(tmp_path: Path) -> None:
    _revision_file(tmp_path, "a", "0001", "None")
    (tmp_path / "b.py").write_text('revision = "00" + "02"\ndown_revision = "0001"\n')
    assert heads.head_revision(tmp_path) is None


async def test_a_new_database_is_migrated_without_alembic_only_once_at_head(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    assert _probe(url) == "alembic imported"  # created and migrated
    assert await schema_revision(url) == head_revision()
    assert _probe(url) == "alembic not imported"  # already at the head


async def test_a_database_behind_the_head_is_still_upgraded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    await upgrade_schema(url)
    await downgrade_schema(url, "0012")
    assert _probe(url) == "alembic imported"
    assert await schema_revision(url) == head_revision()
