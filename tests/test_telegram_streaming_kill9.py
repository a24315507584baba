"""A gateway killed (SIGKILL) while a group reply streams: after the restart the turn runs
again into the same preview message, which becomes the final, delivered once."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegram
from tests.test_cli import client_for, gateway_process, wait_ready
from tests.test_telegram_e2e import rows, until
from tests.test_telegram_streaming_e2e import (
    GROUP,
    LONG_ANSWER,
    TOKEN_SECONDS,
    delivered,
    shown,
)


async def test_a_kill_mid_stream_finalises_the_same_message_exactly_once(home: Path) -> None:
    async with FakeOpenAIServer(token_seconds=TOKEN_SECONDS) as model, FakeTelegram() as tg:
        env = {**model.gateway_env(), **tg.gateway_env(TELEGRAM_ALLOW_ALL_USERS="true")}
        model.reply_text(LONG_ANSWER)  # the run that is killed
        model.reply_text(LONG_ANSWER)  # the turn run again after the restart
        with gateway_process(home, env) as (proc, url):
            async with client_for(url) as client:
                await wait_ready(proc, client)
            tg.push_update(tg.group_message("tell me a story", mention=True))
            [preview] = await tg.wait_sent(1, timeout=30)
            await tg.wait_edits(1, timeout=30)  # edited: its id was recorded before
            proc.send_signal(signal.SIGKILL)
            await asyncio.to_thread(proc.wait, 30)
        at_the_kill = shown(tg, GROUP, preview.message_id)

        with gateway_process(home, env) as (proc, url):
            async with client_for(url) as client:
                await wait_ready(proc, client)
            await tg.wait_until(
                lambda: shown(tg, GROUP, preview.message_id) == LONG_ANSWER,
                timeout=60,
                what="the preview finalised",
            )
            await until(lambda: delivered(home))
            proc.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(proc.wait, 30) == 0

    assert at_the_kill != LONG_ANSWER  # killed while the model was still streaming
    assert LONG_ANSWER.startswith(at_the_kill)
    assert tg.sent == [preview]  # no second message beside the finalised preview
    assert tg.deletions == []
    assert {e.message_id for e in tg.edits} == {preview.message_id}
    assert len(model.requests) == 2
    assert [r["status"] for r in rows(home, "SELECT status FROM outbox")] == ["delivered"]
