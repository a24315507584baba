"""Every migration can be undone: upgrade to head, downgrade to base, upgrade again, on
SQLite and on a throwaway PostgreSQL database; and ``chatgate db history/downgrade``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import inspect

from core.errors import StoreError
from core.store.engine import create_engines
from core.store.schema_version import (
    code_revision,
    downgrade_schema,
    migration_history,
    schema_revision,
    upgrade_schema,
)
from tests.postgres import postgres_database
from tests.test_cli import chatgate, client_for, gateway_process, wait_ready


@pytest.fixture(params=["sqlite", "postgresql"])
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
        return
    async with postgres_database() as url:
        yield url


async def tables(url: str) -> set[str]:
    engines = create_engines(url)
    try:
        async with engines.read.connect() as conn:
            names = await conn.run_sync(lambda sync: inspect(sync).get_table_names())
    finally:
        await engines.dispose()
    # SQLite's FTS5 shadow tables come and go with their virtual table.
    return {name for name in names if name != "alembic_version"}


async def test_every_migration_downgrades_and_upgrades_again(database_url: str) -> None:
    await upgrade_schema(database_url)
    at_head = await tables(database_url)

    await downgrade_schema(database_url, "base")
    at_base = await tables(database_url)
    revision_at_base = await schema_revision(database_url)
    await upgrade_schema(database_url)

    assert {"sessions", "messages", "inbox"} <= at_head
    assert at_base == set()
    assert revision_at_base is None
    assert await tables(database_url) == at_head
    assert await schema_revision(database_url) == code_revision()


async def test_an_unknown_revision_is_refused(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
    await upgrade_schema(url)
    with pytest.raises(StoreError, match="no migration 'nope'"):
        await downgrade_schema(url, "nope")
    assert await schema_revision(url) == code_revision()


def test_db_history_marks_the_current_revision_and_downgrade_asks_first(home: Path) -> None:
    assert chatgate("db", "upgrade").returncode == 0
    previous = migration_history()[-2][0]

    history = chatgate("db", "history")
    declined = chatgate("db", "downgrade", previous, stdin="n\n")
    after_decline = chatgate("db", "current")
    done = chatgate("db", "downgrade", previous, "--yes")
    after = chatgate("db", "history")

    marked = [line for line in history.stdout.splitlines() if line.startswith("*")]
    assert marked == [f"* {code_revision()}  {migration_history()[-1][1]}"]
    assert len(history.stdout.splitlines()) == len(migration_history())
    assert declined.returncode == 1
    assert f"database: {code_revision()}" in after_decline.stdout
    assert done.returncode == 0, done.stderr
    assert [line for line in after.stdout.splitlines() if line.startswith("*")][0].startswith(
        f"* {previous} "
    )


async def test_a_downgrade_is_refused_while_a_gateway_holds_the_database(home: Path) -> None:
    with gateway_process(home, {}) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            refused = chatgate("db", "downgrade", "base", "--yes")
        current = chatgate("db", "current")

    assert refused.returncode == 1
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith(f"chatgate: another chatgate gateway (pid {proc.pid} on ")
    assert f"database: {code_revision()}" in current.stdout
