"""A real MCP server for the tests, written with the SDK's ``MCPServer``.

Run as a script it serves stdio (``python tests/fakes/mcp_server.py``); the tests also
serve ``build_server()`` over Streamable HTTP on 127.0.0.1 (``streamable_http_app``).

Tools: ``echo``, ``add``, ``stats`` (structured content), ``wipe`` (destructiveHint),
``picture`` (an image), ``link`` (a resource link and an embedded resource), ``big``
(``n`` characters of text), ``fail`` (an isError result), ``slow`` (never answers) and
``crash`` (the process exits mid-call). With ``--extra`` it also offers tools whose
names need sanitising (``odd.name``, a 70-character name) and ``odd_name``,
whose sanitised name clashes with ``odd.name``'s. With ``--hang`` it reads its
stdin and never answers anything, initialize included.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import (
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

LONG_NAME = "a_really_long_tool_name_that_goes_on_and_on_well_past_the_limit_of_64"
PNG_BYTES = b"\x89PNG\r\n\x1a\n" + b"\0" * 92


def build_server(name: str = "fake", *, extra: bool = False) -> MCPServer:
    server: MCPServer = MCPServer(name, log_level="WARNING")
    _plain_tools(server)
    _content_tools(server)
    _misbehaving_tools(server)
    if extra:
        server.add_tool(
            _echo, name="odd.name", description="Echo, odd name.", structured_output=False
        )
        server.add_tool(
            _echo, name=LONG_NAME, description="Echo, long name.", structured_output=False
        )
        # Sanitised, ``odd.name`` is ``odd_name`` too: the later one is refused.
        server.add_tool(_echo, name="odd_name", description="A clash.", structured_output=False)
    return server


def _echo(text: str) -> str:
    return text


def _plain_tools(server: MCPServer) -> None:
    server.add_tool(_echo, name="echo", description="Echo the text back.", structured_output=False)

    @server.tool(description="Add two integers.", structured_output=False)
    def add(a: int, b: int) -> str:
        return str(a + b)

    @server.tool(description="Statistics of a list of numbers.", structured_output=True)
    def stats(values: list[float]) -> dict[str, float]:
        return {"count": len(values), "total": sum(values)}

    @server.tool(
        description="Delete everything.",
        annotations=ToolAnnotations(destructive_hint=True),
        structured_output=False,
    )
    def wipe(target: str) -> str:
        return f"wiped {target}"


def _content_tools(server: MCPServer) -> None:
    @server.tool(description="A small picture.", structured_output=False)
    def picture() -> list[Any]:
        data = base64.b64encode(PNG_BYTES).decode()
        return [TextContent(text="here it is"), ImageContent(data=data, mime_type="image/png")]

    @server.tool(description="A link and an embedded note.", structured_output=False)
    def link() -> list[Any]:
        note = TextResourceContents(uri="memo://note", text="the note's text")
        return [
            ResourceLink(uri="file:///tmp/report.txt", name="report"),
            EmbeddedResource(resource=note),
        ]

    @server.tool(description="n characters of text.", structured_output=False)
    def big(n: int) -> str:
        return "x" * n


def _misbehaving_tools(server: MCPServer) -> None:
    @server.tool(description="Always fails.", structured_output=False)
    def fail() -> str:
        raise ToolError("the fake tool failed on purpose")

    @server.tool(description="Never answers.", structured_output=False)
    async def slow() -> str:
        await asyncio.Event().wait()
        return "unreachable"

    @server.tool(description="Ends the server process.", structured_output=False)
    def crash() -> str:
        os._exit(3)


def _hang() -> None:
    # Read (so the client's writes never block) and answer nothing.
    while sys.stdin.buffer.read(1):
        pass


if __name__ == "__main__":
    if "--hang" in sys.argv:
        _hang()
    else:
        asyncio.run(build_server(extra="--extra" in sys.argv).run_stdio_async())
