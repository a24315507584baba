"""Which MCP tools the model sees, under which names, and what it reads of their results."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from core.mcp.naming import MAX_NAME_CHARS, model_name
from core.models.base import ToolSpec
from core.tools import ToolContext
from tests.fakes.mcp_server import LONG_NAME
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway
from tests.mcp_helpers import (
    http_block,
    http_mcp_server,
    manager_of,
    reached,
    stdio_block,
    write_config,
)


def offered_names(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request["tools"]]


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def test_include_exclude_sanitising_truncation_and_a_refused_clash(
    home: Path, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    include = ["echo", "odd*", "a_really*", "wipe"]
    write_config(
        home,
        stdio_block("fk", "--extra", include=include, exclude=["wipe"], timeout_seconds=10),
        stdio_block("d", include=["wipe", "echo"], timeout_seconds=10),
    )
    caplog.set_level(logging.WARNING, logger="core.mcp")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await reached(gw, "fk", "connected")
        await reached(gw, "d", "connected")
        long_name = model_name("fk", LONG_NAME)
        fake_openai.reply_tool_call(long_name, {"text": "from far away"})
        fake_openai.reply_text("ok")
        await gw.say("use the long one")
        registry = gw.gateway.core.tools
        statuses = {s.name: s for s in manager_of(gw).statuses()}

        names = offered_names(fake_openai.requests[0])
        mcp_names = sorted(n for n in names if n.startswith("mcp_"))
        assert mcp_names == sorted(
            ["mcp_fk_echo", "mcp_fk_odd_name", long_name, "mcp_d_wipe", "mcp_d_echo"]
        )
        assert len(long_name) == MAX_NAME_CHARS
        assert long_name == model_name("fk", LONG_NAME)  # the same cut on every start
        assert tool_results(fake_openai.requests[-1]) == [
            {"success": True, "result": "from far away"}
        ]
        assert statuses["fk"].refused == ("odd_name",)
        clash = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
        assert clash == [
            "mcp server fk: tool 'odd_name' is refused: its name mcp_fk_odd_name is taken "
            "by its tool 'odd.name'"
        ]
        assert getattr(registry.get("mcp_d_wipe"), "destructive", False) is True
        assert getattr(registry.get("mcp_d_echo"), "destructive", False) is False


def test_model_names_follow_the_providers_rules() -> None:
    assert model_name("my.server", "do it!") == "mcp_my_server_do_it_"
    cut = model_name("s", "x" * 100)
    assert len(cut) == MAX_NAME_CHARS
    assert cut != model_name("s", "x" * 101)  # a shared prefix still gives two names


async def test_results_text_images_resources_errors_and_the_cap(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with http_mcp_server() as url:
        write_config(
            home, http_block("web", url, timeout_seconds=10), extra="  max_result_chars: 1000\n"
        )
        async with running_gateway(home, fake_openai.gateway_env()) as gw:
            await reached(gw, "web", "connected")
            fake_openai.reply_tool_calls(
                [
                    ("mcp_web_big", {"n": 30_000}),
                    ("mcp_web_picture", {}),
                    ("mcp_web_link", {}),
                    ("mcp_web_fail", {}),
                ]
            )
            fake_openai.reply_text("Seen.")
            await gw.say("show me everything")

    big, picture, link, fail = tool_results(fake_openai.requests[-1])
    assert big["result"].startswith("x" * 1000 + "\n[cut 29,000 of 30,000 characters")
    assert "mcp.max_result_chars (1,000)" in big["result"]
    assert picture == {
        "success": True,
        "result": "here it is\n[image: image/png, 100 bytes, not shown]",
    }
    assert link["result"] == (
        "[resource link: report <file:///tmp/report.txt>]\n[resource <memo://note>]\n"
        "the note's text"
    )
    assert fail == {
        "success": False,
        "error": "Error executing tool fail: the fake tool failed on purpose",
    }


class _Builtin:
    """A tool of the gateway's own that happens to have an MCP tool's name."""

    spec = ToolSpec("mcp_fk_echo", "ours", {"type": "object", "properties": {}})

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        return json.dumps({"success": True, "result": "ours"})


async def test_a_name_a_built_in_tool_has_is_refused(
    home: Path, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    write_config(home, stdio_block("fk", include=["echo", "add"], timeout_seconds=10))
    caplog.set_level(logging.WARNING, logger="core.mcp")
    async with running_gateway(home, fake_openai.gateway_env(), tools=[_Builtin()]) as gw:
        await reached(gw, "fk", "connected")
        status = manager_of(gw).statuses()[0]
        kept = gw.gateway.core.tools.get("mcp_fk_echo")

    assert status.tools == ("mcp_fk_add",)
    assert status.refused == ("echo",)
    assert isinstance(kept, _Builtin)
    assert (
        "mcp server fk: tool 'echo' is refused: its name mcp_fk_echo is taken by a built-in tool"
        in [r.getMessage() for r in caplog.records]
    )
