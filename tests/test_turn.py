"""The turn loop through the real anthropic client against the fake server."""

from __future__ import annotations

from core.clock import ManualClock
from core.models.anthropic_client import AnthropicModel
from core.models.base import ModelConfig
from core.store.records import NewMessage
from core.tools import ToolContext, ToolRegistry
from core.turn import TurnRunner
from tests.fakes.anthropic_server import FakeAnthropicServer

CTX = ToolContext(
    session_id="s1", session_key="webhook:c1", platform="webhook", chat_id="c1", user_id="u1"
)


async def test_cache_tokens_add_up_over_the_turn(fake_anthropic: FakeAnthropicServer) -> None:
    fake_anthropic.cache_write_tokens = 5
    fake_anthropic.reply_tool_use("no_such_tool", {})
    fake_anthropic.reply_text("Done.")
    config = ModelConfig(
        provider="anthropic", model="claude-test", base_url=fake_anthropic.base_url, api_key="k"
    )
    model = AnthropicModel(config)
    clock = ManualClock()
    runner = TurnRunner(model, ToolRegistry(), clock, max_iterations=4)
    try:
        result = await runner.run(
            system="sys",
            history=[],
            user=NewMessage(role="user", content="go", created_at=clock.now()),
            ctx=CTX,
        )
    finally:
        await model.aclose()

    assert result.reply == "Done."
    assert (result.cache_read_tokens, result.cache_write_tokens) == (180, 10)
    assert [(m.role, m.cache_read_tokens, m.cache_write_tokens) for m in result.messages] == [
        ("user", None, None),
        ("assistant", 90, 5),
        ("tool", None, None),
        ("assistant", 90, 5),
    ]
