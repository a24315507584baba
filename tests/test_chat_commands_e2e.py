"""Chat commands through the webhook with the fake model: an unknown ``/word`` never
reaches the model nor opens a session; paths and ``/<skill>`` still do."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx

from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway

PDF_SKILL = """---
name: pdf
description: Turn a document into a PDF
---
Use the pandoc recipe.
"""


def sessions_count(home: Path) -> int:
    with sqlite3.connect(home / "state.db") as conn:
        count: int = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
        return count


def texts(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [reply["text"] for reply in response.json()["replies"]]


async def test_an_unknown_command_answers_one_line_and_never_reaches_the_model(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        unknown = await gw.say("/frobnicate the widgets")
        addressed = await gw.say("/Frobnicate@chatgate_bot")
        alone = await gw.say("/tmp")
        sessions = sessions_count(home)

    assert texts(unknown) == ["unknown command, see /help"]
    assert texts(addressed) == ["unknown command, see /help"]
    assert texts(alone) == ["unknown command, see /help"]
    assert fake_openai.requests == []
    assert sessions == 0


async def test_paths_and_skill_commands_still_reach_the_model(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    folder = home / "skills" / "pdf"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(PDF_SKILL, encoding="utf-8")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        path = await gw.say("/usr/bin is full, what now?")
        skill = await gw.say("/pdf the report")
        known = await gw.say("/help")

    assert texts(path) == ["echo: /usr/bin is full, what now?"]
    assert texts(skill)[0].startswith("echo: /pdf the report")
    assert "/help /start - list the commands" in texts(known)[0]
    assert len(fake_openai.requests) == 2
    assert "Use the pandoc recipe." in fake_openai.requests[1]["messages"][-1]["content"]
