"""Usage accounting end to end: each model call's row, by every dimension, through the
webhook, ``/usage`` and ``chatgate usage --json``, against the fake model's reported usage."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.features.review import Review
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway
from tests.test_cli import chatgate, cli_env

PRICE = {"input": 1.0, "output": 2.0, "cache_read": 0.5}
REVIEW = "[Background review"


def write_config(home: Path, **sections: Any) -> None:
    config = {"webhook": {"owners": ["boss"]}, **sections}
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def usage(*args: str) -> dict[str, Any]:
    done = chatgate("usage", "--json", *args, env=cli_env())
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def rows_by(by: str) -> dict[str | None, dict[str, Any]]:
    return {row[by]: row for row in usage("--by", by, "--since", "2000-01-01")["rows"]}


def reported(home: Path, where: str = "1 = 1") -> dict[str, int]:
    """What the fake model reported for the turns, as the sessions table adds it up."""
    with sqlite3.connect(home / "state.db") as conn:
        row = conn.execute(
            "SELECT sum(input_tokens), sum(output_tokens), sum(cache_read_tokens) "
            f"FROM sessions WHERE {where}"
        ).fetchone()
    return {"input_tokens": row[0], "output_tokens": row[1], "cache_read_tokens": row[2]}


def numbers(row: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v for k, v in row.items() if k not in ("chat", "person", "platform", "kind", "group")
    }


def cost(row: dict[str, Any]) -> float:
    uncached = row["input_tokens"] - row["cache_read_tokens"]
    return float(uncached + 2 * row["output_tokens"] + 0.5 * row["cache_read_tokens"]) / 1e6


async def test_every_call_is_counted_by_chat_person_platform_and_kind(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(
        home,
        pricing={"openai": {"fake-model": PRICE}},
        memory={"nudge_interval": 2},
    )
    fake_openai.cache_read_tokens = 3
    fake_openai.reply_text("Nothing to save.", when=REVIEW)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello there", chat_id="c1", user_id="alice")
        await gw.say("one two three", chat_id="c1", user_id="alice")
        await gw.say("hi", chat_id="c2", user_id="bob")
        service = gw.gateway.feature(Review).service
        assert service is not None
        await service.wait()

    chats, people, kinds = rows_by("chat"), rows_by("person"), rows_by("kind")
    platforms = rows_by("platform")
    c1 = reported(home, "chat_id = 'c1'")
    c2 = reported(home, "chat_id = 'c2'")
    review = kinds["review"]
    assert review["calls"] == 1
    assert numbers(people[None]) == numbers(review)  # background work has no person
    turn_c1 = {k: chats["webhook:c1"][k] - review[k] for k in c1}  # c1 was reviewed
    assert turn_c1 == c1
    assert {k: chats["webhook:c2"][k] for k in c2} == c2
    assert {k: people["webhook:alice"][k] for k in c1} == c1
    assert people["webhook:alice"]["cache_read_tokens"] == 2 * 3
    assert chats["webhook:c1"]["calls"] == 3
    assert platforms["webhook"]["calls"] == 4
    assert kinds["turn"]["calls"] == 3
    assert kinds["turn"]["cache_read_tokens"] == 9
    for row in (*chats.values(), *people.values(), *kinds.values()):
        assert abs(row["cost"] - cost(row)) < 1e-12


async def test_usage_in_the_chat_and_the_whole_gateway_for_owners(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello there", chat_id="c1", user_id="alice")
        await gw.say("hi", chat_id="c2", user_id="boss")
        asked = await gw.say("/usage", chat_id="c1", user_id="alice")
        owner = await gw.say("/usage", chat_id="c2", user_id="boss")

    [text] = [r["text"] for r in asked.json()["replies"]]
    [owners] = [r["text"] for r in owner.json()["replies"]]
    c1 = reported(home, "chat_id = 'c1'")
    tokens = c1["input_tokens"] + c1["output_tokens"]
    this_chat = (
        f"This chat today: 1 call, {tokens:,} tokens ({c1['input_tokens']:,} in, "
        f"{c1['output_tokens']:,} out; cache 0 read, 0 written)"
    )
    assert this_chat in text.splitlines()
    assert this_chat.replace("This chat today", "You this month") in text.splitlines()
    assert "Whole gateway" not in text
    assert [line for line in owners.splitlines() if line.startswith("Whole gateway today")] == [
        line
        for line in owners.splitlines()
        if line.startswith("Whole gateway today: 2 calls")  # /usage itself calls no model
    ]


async def test_cli_json_and_a_forgotten_persons_usage(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello there", chat_id="c1", user_id="alice")
        await gw.say("hi", chat_id="c2", user_id="bob")

    total = usage()
    shown = chatgate("people", "show", "webhook:alice", "--json", env=cli_env())
    forgot = chatgate("people", "forget", "webhook:alice", "--yes", env=cli_env())
    after = rows_by("person")

    assert total["by"] is None
    [row] = total["rows"]
    assert row["calls"] == 2
    assert row["cost"] is None  # no pricing: no cost, not zero
    [alices] = json.loads(shown.stdout)["areas"]["usage"]
    assert (alices["chat_key"], alices["kind"]) == ("webhook:c1", "turn")
    assert forgot.returncode == 0, forgot.stdout + forgot.stderr
    assert list(after) == ["webhook:bob"]


async def test_cache_writes_and_their_price_from_an_anthropic_model(
    home: Path, fake_anthropic: FakeAnthropicServer
) -> None:
    price = {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}
    write_config(home, pricing={"anthropic": {"claude-test": price}})
    fake_anthropic.cache_write_tokens = 40  # and 90 read, 10 fresh, 5 out per answer
    env = {
        "CHATGATE_MODEL_PROVIDER": "anthropic",
        "CHATGATE_MODEL": "claude-test",
        "CHATGATE_MODEL__BASE_URL": fake_anthropic.base_url,
        "ANTHROPIC_API_KEY": fake_anthropic.api_key,
    }
    async with running_gateway(home, env) as gw:
        await gw.say("hello", chat_id="c1", user_id="alice")

    [row] = usage("--since", "2000-01-01")["rows"]
    assert numbers(row) == {
        "calls": 1,
        "input_tokens": 140,  # the whole prompt: fresh, read and written
        "output_tokens": 5,
        "cache_read_tokens": 90,
        "cache_write_tokens": 40,
        "cost": pytest.approx((10 * 3.0 + 5 * 15.0 + 90 * 0.3 + 40 * 3.75) / 1e6),
    }
