"""MCP tools through the running gateway and the fake model: real MCP servers over
stdio (a subprocess) and Streamable HTTP (127.0.0.1)."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.loopback import free_port
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


async def test_a_server_that_crashes_mid_session_is_restarted(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, stdio_block("fake", timeout_seconds=10))
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await reached(gw, "fake", "connected")
        fake_openai.reply_tool_call("mcp_fake_crash", {})
        fake_openai.reply_text("It went away.")
        await gw.say("crash it")
        crashed = tool_result(fake_openai.requests[-1])

        await reached(gw, "fake", "connected")  # a new process, after a backoff pause
        fake_openai.reply_tool_call("mcp_fake_add", {"a": 2, "b": 40})
        fake_openai.reply_text("42.")
        await gw.say("add them")

        assert crashed["success"] is False
        assert crashed["error"].startswith("MCP server 'fake' is not connected (")
        assert "connection closed" in crashed["error"]
        assert tool_result(fake_openai.requests[-1]) == {"success": True, "result": "42"}


async def test_a_server_that_never_answers_delays_nothing_and_a_slow_call_times_out(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(
        home,
        stdio_block("hang", "--hang", timeout_seconds=2),
        stdio_block("fake", timeout_seconds=4),
    )
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        # Started and ready while "hang" has not answered its handshake.
        assert (await gw.client.get("/readyz")).status_code == 200
        await reached(gw, "fake", "connected")
        fake_openai.reply_tool_call("mcp_fake_slow", {})
        fake_openai.reply_tool_call("mcp_fake_echo", {"text": "still here"})
        fake_openai.reply_text("Too slow.")
        response = await gw.say("take your time")
        timed_out = tool_result(fake_openai.requests[-2])
        await reached(gw, "hang", "failed")
        status = (await gw.say("/status")).json()["replies"][0]["text"]
        metrics = (await gw.client.get("/metrics")).text

        assert response.json()["replies"] == [{"text": "Too slow."}]
        assert timed_out == {
            "success": False,
            "error": "MCP server 'fake' did not answer slow within 4 s "
            "(mcp.servers.fake.timeout_seconds); the call was abandoned",
        }
        # The abandoned call left the connection usable.
        assert tool_result(fake_openai.requests[-1]) == {"success": True, "result": "still here"}
        assert "MCP fake (stdio): connected, 10 tools" in status
        assert "MCP hang (stdio): failed, 0 tools; last error: no answer within 2 s" in status
        assert (await gw.client.get("/readyz")).status_code == 200
        assert 'chatgate_mcp_server_connected{server="fake"} 1.0' in metrics
        assert 'chatgate_mcp_server_connected{server="hang"} 0.0' in metrics
        assert 'chatgate_mcp_server_tools{server="fake"} 10.0' in metrics
        assert 'chatgate_mcp_servers{status="failed"} 1.0' in metrics


async def test_reload_mcp_is_for_owners_and_reconnects_from_the_current_config(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home, stdio_block("fake", include=["echo", "add"], timeout_seconds=10))
    async with http_mcp_server() as url, running_gateway(home, fake_openai.gateway_env()) as gw:
        await reached(gw, "fake", "connected")
        write_config(home, "    x:\n      command: a\n      url: http://127.0.0.1:9/mcp\n")
        broken = await gw.say("/reload-mcp", user_id="u1")
        write_config(
            home,
            stdio_block("fake", include=["echo"], timeout_seconds=10),
            http_block("web", url, include=["stats"], timeout_seconds=10),
        )
        refused = await gw.say("/reload-mcp", user_id="u2")
        reloaded = await gw.say("/reload-mcp", user_id="u1")
        fake_openai.reply_text("hi")
        await gw.say("/new")
        await gw.say("what can you do?")

        assert broken.json()["replies"][0]["text"].startswith(
            "config.yaml has an error, nothing was reloaded: mcp.servers.x: "
        )
        assert refused.json()["replies"] == [
            {"text": "Only the bot's owners can reload the MCP servers."}
        ]
        assert reloaded.json()["replies"] == [
            {
                "text": "MCP servers reloaded; new sessions see their tools:\n"
                "- fake (stdio): connected, 1 tool\n- web (http): connected, 1 tool"
            }
        ]
        names = [t["function"]["name"] for t in fake_openai.requests[-1]["tools"]]
        assert sorted(n for n in names if n.startswith("mcp_")) == [
            "mcp_fake_echo",
            "mcp_web_stats",
        ]


async def test_an_http_server_that_goes_away_answers_errors_and_is_reconnected(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    write_config(home, http_block("web", url, timeout_seconds=5))
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        async with http_mcp_server(port=port):
            await reached(gw, "web", "connected")
        fake_openai.reply_tool_call("mcp_web_echo", {"text": "anyone?"})
        fake_openai.reply_text("Gone.")
        await gw.say("is it there?")
        gone = tool_result(fake_openai.requests[-1])
        async with http_mcp_server(port=port):
            await reached(gw, "web", "connected")
            fake_openai.reply_tool_call("mcp_web_echo", {"text": "back"})
            fake_openai.reply_text("Back.")
            await gw.say("and now?")
            back = tool_result(fake_openai.requests[-1])

    assert gone["success"] is False
    assert gone["error"].startswith("MCP server 'web' is not connected (failed: ")
    assert back == {"success": True, "result": "back"}
