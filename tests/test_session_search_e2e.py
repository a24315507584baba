"""session_search through the gateway: real history comes back, other chats' never does."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway, tool_result

FACT = "the staging database is rotated every Friday at noon"


async def test_a_past_session_is_found_in_its_own_chat_only(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say(FACT)
        await gw.say("/new")
        fake_openai.reply_tool_call("session_search", {"query": "staging rotated"})
        fake_openai.reply_text("It is rotated on Fridays.")
        found = await gw.say("when is staging rotated?")
        fake_openai.reply_tool_call("session_search", {"query": "staging rotated"})
        fake_openai.reply_text("I found nothing.")
        await gw.say("when is staging rotated?", chat_id="someone-else", user_id="u9")

    assert found.json()["replies"] == [{"text": "It is rotated on Fridays."}]
    own = tool_result(fake_openai.requests[2])
    assert own["success"] is True
    [hit] = own["results"]
    anchors = [m for m in hit["window"] if m.get("anchor")]
    assert [m["content"] for m in anchors] == [FACT]
    other = tool_result(fake_openai.requests[4])
    assert FACT not in json.dumps(other)
