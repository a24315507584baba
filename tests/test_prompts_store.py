"""Prompts stored once (migration 0016, ``core.store.prompts``): sessions that differ
only by their own id share one stored prompt, read back byte for byte; a converted
database sends the model the same bytes; forgetting leaves no prompt behind."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from core.store.db import SessionDB
from core.store.engine import create_engines
from core.store.schema import prompts
from migrations.runner import downgrade, upgrade
from tests.direct_sql import DirectSql
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway
from tests.postgres import postgres_database

T0 = 1_760_000_000.0
TOOLS = '[{"name": "memory", "description": "Remember.", "parameters": {}}]'


@pytest.fixture(params=["sqlite", "postgres"])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'state.db'}"
        return
    async with postgres_database() as url:
        yield url


def prompt_for(session_id: str) -> str:
    return f"You are the agent.\n\n  exact  bytes \n\nSession: {session_id}\nModel: m (p)"


# Sessions rows as revision 0015 held them: each its own copy of prompt and tools.
_OLD_SESSION = text(
    "INSERT INTO sessions (id, session_key, platform, chat_id, started_at, last_active_at, "
    "provider, model, system_prompt, tool_specs) VALUES "
    "(:id, :key, 'webhook', :id, :t, :t, 'p', 'm', :prompt, :tools)"
)
_OLD: list[dict[str, str | None]] = [
    {"id": "s1", "key": "webhook:s1", "prompt": prompt_for("s1"), "tools": TOOLS},
    {"id": "s2", "key": "webhook:s2", "prompt": prompt_for("s2"), "tools": TOOLS},
    {"id": "s3", "key": "webhook:s3", "prompt": prompt_for("s3"), "tools": None},
    # Blanked by a forgetting (``end_reason = 'forget'``).
    {"id": "s4", "key": "webhook:s4", "prompt": "", "tools": TOOLS},
]


async def _stored_prompts(url: str) -> list[str]:
    async with DirectSql(url) as sql:
        return sorted(r.body for r in await sql.rows(select(prompts.c.body)))


async def test_upgrading_stores_each_prompt_once_and_reads_back_the_same_bytes(
    db_url: str,
) -> None:
    engines = create_engines(db_url)
    try:
        await upgrade(engines.write, "0015")
        async with engines.write.begin() as conn:
            for row in _OLD:
                await conn.execute(_OLD_SESSION, {**row, "t": T0})
        await upgrade(engines.write)
    finally:
        await engines.dispose()
    async with SessionDB(db_url) as db:
        read = [await db.session(str(row["id"])) for row in _OLD]

    assert [(r.system_prompt, r.tool_specs) for r in read if r] == [
        (row["prompt"], row["tools"]) for row in _OLD
    ]
    # One prompt (the id cut out) and one tool list, for four sessions.
    assert await _stored_prompts(db_url) == sorted([TOOLS, prompt_for("")])


async def test_downgrading_puts_every_prompt_back_in_its_row(db_url: str) -> None:
    engines = create_engines(db_url)
    try:
        await upgrade(engines.write, "0015")
        async with engines.write.begin() as conn:
            for row in _OLD:
                await conn.execute(_OLD_SESSION, {**row, "t": T0})
        await upgrade(engines.write)
        await downgrade(engines.write, "0015")
        async with engines.read.connect() as conn:
            back = (
                await conn.execute(
                    text("SELECT system_prompt, tool_specs FROM sessions ORDER BY id")
                )
            ).all()
    finally:
        await engines.dispose()

    assert [tuple(r) for r in back] == [(row["prompt"], row["tools"]) for row in _OLD]


async def test_a_converted_chat_sends_the_model_the_same_bytes(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello")
        url = gw.settings.database_url
    engines = create_engines(url)
    try:  # back to the old form, then converted again as an upgrade would
        await downgrade(engines.write, "0015")
        await upgrade(engines.write)
    finally:
        await engines.dispose()
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello again")

    first, second = fake_openai.requests
    assert second["messages"][0] == first["messages"][0]
    assert second["tools"] == first["tools"]
    assert [m["content"] for m in second["messages"][1:]] == [
        "hello",
        "echo: hello",
        "hello again",
    ]


async def test_chats_opened_alike_share_one_stored_prompt(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        for chat in ("a", "b", "c"):
            await gw.say("hello", chat_id=chat)
        url = gw.settings.database_url
    async with DirectSql(url) as sql:
        [(count,)] = await sql.rows(select(func.count()).select_from(prompts))

    systems = {r["messages"][0]["content"] for r in fake_openai.requests}
    assert len(systems) == 3  # each names its own session
    assert count == 2  # one prompt and one tool list
