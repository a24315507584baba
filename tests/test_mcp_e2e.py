"""MCP tools through the running gateway and the fake model: real MCP servers over
stdio (a subprocess) and Streamable HTTP (127.0.0.1)."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway, tool_result
from tests.mcp_helpers import http_block, http_mcp_server, reached, stdio_block, write_config


async def test_a_stdio_tool_call_and_its_result_reach_the_model(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, stdio_block("fake", timeout_seconds=10))
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await reached(gw, "fake", "connected")
        fake_openai.reply_tool_call("mcp_fake_echo", {"text": "hello there"})
        fake_openai.reply_text("It said hello.")
        response = await gw.say("echo something")

        assert response.json()["replies"] == [{"text": "It said hello."}]
        assert tool_result(fake_openai.requests[-1]) == {"success": True, "result": "hello there"}
        offered = {t["function"]["name"]: t["function"] for t in fake_openai.requests[0]["tools"]}
        assert offered["mcp_fake_add"]["description"] == "Add two integers."
        assert offered["mcp_fake_add"]["parameters"]["required"] == ["a", "b"]


async def test_a_streamable_http_tool_with_structured_content(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with http_mcp_server() as url:
        write_config(home, http_block("web", url, timeout_seconds=10))
        async with running_gateway(home, fake_openai.gateway_env()) as gw:
            await reached(gw, "web", "connected")
            fake_openai.reply_tool_call("mcp_web_stats", {"values": [1, 2, 3.5]})
            fake_openai.reply_text("Done.")
            await gw.say("some statistics please")

            result = tool_result(fake_openai.requests[-1])
            assert result["success"] is True
            assert '"total": 6.5' in result["result"]
