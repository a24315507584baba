"""``chatgate mcp``: the configured MCP servers, connected to from here and reported.

``list`` connects to every configured server at once (each bounded by its
``timeout_seconds``) and shows its transport, state and tools; ``probe NAME`` connects to
one, even a disabled one, lists its tools with the names the model sees and, with
``--call``, calls one and prints the result as the model would read it. Neither needs a
running gateway; both start stdio servers of their own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from core.errors import McpUnavailable
from core.mcp.connection import RemoteTool
from core.mcp.manager import McpManager, ServerStatus
from core.mcp.naming import model_name, offered
from core.mcp.servers import ServerConfig
from core.tools import ToolRegistry
from gateway.config import load_settings
from gateway.features.mcp import McpSettings, chatgate_version, describe, server_configs
from gateway.json_output import JsonFlag, emit

mcp_app = typer.Typer(no_args_is_help=True, help="MCP servers: their state and their tools.")
console = Console(highlight=False)


def _quiet() -> None:
    """The report says what went wrong; the connection's warnings would say it twice."""
    for name in ("core.mcp", "mcp"):
        logging.getLogger(name).addHandler(logging.NullHandler())


@mcp_app.command("list")
def list_(as_json: JsonFlag = False) -> None:
    """Each configured server: transport, state after a connect attempt, tool names."""
    _quiet()
    m = load_settings().section(McpSettings)
    configs = server_configs(m)
    statuses = asyncio.run(_statuses(configs, m.max_result_chars))
    if as_json:
        emit([_json(status) for status in statuses])
        return
    if not statuses:
        console.print("No MCP servers are configured (mcp.servers in config.yaml).", markup=False)
        return
    table = Table()
    for column in ("server", "transport", "state", "tools", "last error"):
        table.add_column(column)
    for s in statuses:
        error = s.last_error if s.state != "connected" else ""
        row = (s.name, s.transport, s.state, " ".join(s.tools), error)
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)


async def _statuses(configs: Sequence[ServerConfig], max_chars: int) -> list[ServerStatus]:
    async with _manager(configs, max_chars) as manager:
        await manager.settled()
        return manager.statuses()


def _manager(configs: Sequence[ServerConfig], max_chars: int) -> McpManager:
    return McpManager(
        ToolRegistry(), configs, max_result_chars=max_chars, version=chatgate_version()
    )


def _json(s: ServerStatus) -> dict[str, Any]:
    return {
        "server": s.name,
        "transport": s.transport,
        "state": s.state,
        "tools": list(s.tools),
        "refused": list(s.refused),
        "last_error": s.last_error or None,
    }


@mcp_app.command("probe")
def probe(
    name: Annotated[str, typer.Argument(help="a server of mcp.servers")],
    call: Annotated[
        str, typer.Option("--call", help="call this tool (its own name or the model's)")
    ] = "",
    args: Annotated[str, typer.Option("--args", help="the call's arguments: a JSON object")] = "",
) -> None:
    """Connect to one server, list its tools as the model sees them, optionally call one."""
    arguments = _arguments(call, args)
    _quiet()
    m = load_settings().section(McpSettings)
    configs = {c.name: c for c in server_configs(m)}
    if name not in configs:
        known = ", ".join(configs) or "none"
        raise typer.BadParameter(f"no MCP server {name!r} in mcp.servers (configured: {known})")
    config = dataclasses.replace(configs[name], enabled=True)
    failed = asyncio.run(_probe(config, m.max_result_chars, call, arguments))
    if failed:
        raise typer.Exit(1)


def _arguments(call: str, args: str) -> dict[str, Any]:
    if args and not call:
        raise typer.BadParameter("--args needs --call TOOL", param_hint="--args")
    try:
        parsed = json.loads(args or "{}")
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"not JSON: {exc.msg}", param_hint="--args") from None
    if not isinstance(parsed, dict):
        raise typer.BadParameter("must be a JSON object", param_hint="--args")
    return parsed


async def _probe(config: ServerConfig, max_chars: int, call: str, args: dict[str, Any]) -> bool:
    """Report on ``config``'s server; True when the call answered an error."""
    async with _manager([config], max_chars) as manager:
        await manager.settled()
        conn = manager.connection(config.name)
        status = manager.statuses()[0]
        if conn is None or status.state != "connected":
            raise McpUnavailable(
                config.name, f"not connected ({status.last_error or status.state})"
            )
        console.print(f"{describe(status)} ({config.target})", markup=False, soft_wrap=True)
        tools = [t for t in conn.tools if offered(t.name, config.include, config.exclude)]
        _print_tools(config.name, tools)
        if not call:
            return False
        remote = _remote_name(config.name, tools, call)
        result = json.loads(await conn.call(remote, args))
    emit(result)  # as the model reads it, never wrapped
    return result.get("success") is not True


def _print_tools(server: str, tools: Sequence[RemoteTool]) -> None:
    table = Table()
    for column in ("model name", "tool", "description"):
        table.add_column(column)
    for tool in tools:
        about = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
        if tool.destructive:
            about += " [destructive]"
        table.add_row(Text(model_name(server, tool.name)), Text(tool.name), Text(about))
    console.print(table)


def _remote_name(server: str, tools: Sequence[RemoteTool], wanted: str) -> str:
    for tool in tools:
        if wanted in (tool.name, model_name(server, tool.name)):
            return tool.name
    offered_names = ", ".join(t.name for t in tools) or "none"
    raise McpUnavailable(server, f"offers no tool {wanted!r} (offered: {offered_names})")
