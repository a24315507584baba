"""The per-chat rate limit, end to end over the webhook: past the limit a chat hears one
notice and the rest of its messages wait their turn, in order, never dropped."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import select

from core.clock import ManualClock
from core.rate_limit import NOTICE
from core.store.schema import inbox
from tests.direct_sql import read_rows
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegram
from tests.gateway_server import RunningGateway, running_gateway

Json = dict[str, Any]


def write_config(home: Path, webhook: Json) -> None:
    config = {"model": {"retry_base_seconds": 0.01, "max_retries": 1}, "webhook": webhook}
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


async def burst(gw: RunningGateway, count: int, *, chat_id: str = "c1") -> list[str]:
    """POST ``count`` messages with ``wait=false``, one after another; their ids."""
    ids = [f"{chat_id}-m{n}" for n in range(count)]
    for n, message_id in enumerate(ids):
        body = {"chat_id": chat_id, "user_id": "u1", "text": f"n{n}", "message_id": message_id}
        response = await gw.client.post("/webhook/demo", params={"wait": "false"}, json=body)
        assert response.status_code == 202, response.text
    return ids


async def answered(gw: RunningGateway, message_ids: list[str]) -> None:
    """Await the turns of ``message_ids`` through the core (no polling), bounded."""
    found = await read_rows(
        gw.settings.database_url,
        select(inbox.c.id).where(inbox.c.platform_message_id.in_(message_ids)),
    )
    items = [await gw.gateway.db.inbox_item(row.id) for row in found]
    turns = [gw.gateway.core.ingress.replies(item) for item in items if item is not None]
    assert len(turns) == len(message_ids)
    await asyncio.wait_for(asyncio.gather(*turns), timeout=20)


async def chat_replies(gw: RunningGateway, chat_id: str = "c1") -> list[Json]:
    response = await gw.client.get(f"/webhook/demo/chats/{chat_id}/replies", params={"after": 0})
    assert response.status_code == 200, response.text
    replies: list[Json] = response.json()["replies"]
    return replies


async def test_a_burst_past_the_limit_gets_one_notice_and_waits_in_order(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, {"rate_limit_per_minute": 20})
    clock = ManualClock()
    async with running_gateway(home, fake_openai.gateway_env(), clock=clock) as gw:
        ids = await burst(gw, 25)
        await answered(gw, ids[:20])
        waiting = gw.gateway.core.queued
        before_the_window = await chat_replies(gw)
        other_chat = await burst(gw, 1, chat_id="c2")  # another chat is not held back
        await answered(gw, other_chat)
        clock.advance(60)
        await answered(gw, ids[20:])
        after_the_window = await chat_replies(gw)

    notice = NOTICE.format(limit=20)
    assert waiting == 5
    assert [r["text"] for r in before_the_window if r["message_id"] is not None] == [
        f"echo: n{n}" for n in range(20)
    ]
    assert [r["text"] for r in before_the_window if r["message_id"] is None] == [notice]
    echoes = [r for r in after_the_window if r["message_id"] is not None]
    assert [r["message_id"] for r in echoes] == ids  # every one answered, once, in order
    assert [r["text"] for r in echoes] == [f"echo: n{n}" for n in range(25)]
    assert [r["text"] for r in after_the_window].count(notice) == 1


async def test_the_webhook_has_no_limit_by_default(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, {})
    async with running_gateway(home, fake_openai.gateway_env(), clock=ManualClock()) as gw:
        ids = await burst(gw, 25)
        await answered(gw, ids)  # within the same (frozen) minute
        replies = await chat_replies(gw)

    assert [r["message_id"] for r in replies] == ids


async def test_telegram_applies_its_default_limit_of_twenty(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, {})
    clock = ManualClock(start=time.time())
    async with FakeTelegram() as tg:
        env = {**fake_openai.gateway_env(), **tg.gateway_env(TELEGRAM_ALLOW_ALL_USERS="true")}
        env.pop("CHATGATE_TELEGRAM_BASE_FILE_URL")  # derived from the API's base URL
        async with running_gateway(home, env, clock=clock) as gw:
            for n in range(25):
                tg.push_update(tg.private_message(f"n{n}"))
            first = [m.text for m in await tg.wait_sent(21)]
            await asyncio.wait_for(_queued(gw, 5), timeout=10)
            clock.advance(60)
            everything = [m.text for m in await tg.wait_sent(26)]

    notice = NOTICE.format(limit=20)
    assert first.count(notice) == 1
    assert [t for t in first if t != notice] == [f"echo: n{n}" for n in range(20)]
    assert [t for t in everything if t != notice] == [f"echo: n{n}" for n in range(25)]
    assert everything.count(notice) == 1


async def _queued(gw: RunningGateway, count: int) -> None:
    # The core announces no "held" event; its queue length is what a test can observe.
    while gw.gateway.core.queued != count:  # noqa: ASYNC110 - bounded by the caller's wait_for
        await asyncio.sleep(0.01)
