"""``mcp.servers`` settings (bad ones refused at start, in one line; secrets kept out of
logs) and ``chatgate mcp list`` / ``probe`` run as the console script."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from core.errors import ConfigError
from gateway.config import load_settings
from gateway.features.mcp import McpSettings, server_configs
from gateway.log_privacy import REDACTED, SecretRedactor, configured_secrets
from tests.fakes.loopback import free_port
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway
from tests.mcp_helpers import http_block, reached, stdio_block, write_config
from tests.test_cli import chatgate, cli_env


@pytest.mark.parametrize(
    ("block", "key", "reason"),
    [
        ("    x:\n      args: [a]\n", "mcp.servers.x", "exactly one of command"),
        (
            "    x:\n      command: a\n      url: http://127.0.0.1:9/mcp\n",
            "mcp.servers.x",
            "exactly one of command",
        ),
        ("    x:\n      url: ftp://host/mcp\n", "mcp.servers.x", "http:// or https://"),
        ("    x:\n      command: a\n      headers: {A: b}\n", "mcp.servers.x", "for a url"),
        (
            "    x:\n      command: a\n      timeout_seconds: 0\n",
            "mcp.servers.x.timeout_seconds",
            "",
        ),
        ("    bad.name:\n      command: a\n", "mcp.servers", "server name 'bad.name'"),
        (
            "    x:\n      command: a\n      env: {T: '${NOT_SET_ANYWHERE}'}\n",
            "mcp.servers.x.env",
            "not set",
        ),
    ],
)
def test_a_bad_server_is_a_config_error_naming_it(
    home: Path, block: str, key: str, reason: str
) -> None:
    write_config(home, block)

    with pytest.raises(ConfigError) as info:
        load_settings(home, {})

    assert info.value.key == key
    assert reason in info.value.reason
    assert "\n" not in str(info.value)


def test_env_and_header_values_are_secrets_kept_out_of_every_log_line(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FILES_TOKEN", "tok-1234567890")
    write_config(
        home,
        "    files:\n      command: srv\n      env: {API_TOKEN: '${FILES_TOKEN}'}\n",
        http_block(
            "web", "https://mcp.example.com/mcp", headers={"Authorization": "Bearer abcdefgh12"}
        ),
    )
    settings = load_settings(home)
    configs = {c.name: c for c in server_configs(settings.section(McpSettings))}
    redactor = SecretRedactor(configured_secrets(settings))
    record = logging.LogRecord(
        "x", logging.INFO, "", 0, "got %s and %s", ("tok-1234567890", "Bearer abcdefgh12"), None
    )
    redactor.filter(record)

    assert configs["files"].env == {"API_TOKEN": "tok-1234567890"}  # for the subprocess
    assert "tok-1234567890" not in repr(configs["files"])
    assert record.getMessage() == f"got {REDACTED} and {REDACTED}"
    assert configs["web"].scrub("401 for Bearer abcdefgh12") == "401 for <redacted>"


def test_mcp_list_and_probe_connect_and_report(home: Path) -> None:
    write_config(
        home,
        stdio_block("fake", timeout_seconds=15),
        stdio_block("hang", "--hang", timeout_seconds=2),
        http_block("later", "http://127.0.0.1:9/mcp", enabled=False),
    )
    listed = chatgate("mcp", "list", "--json")
    probed = chatgate("mcp", "probe", "fake", "--call", "add", "--args", '{"a": 2, "b": 3}')
    failed = chatgate("mcp", "probe", "hang")

    assert listed.returncode == 0, listed.stderr
    servers = {s["server"]: s for s in json.loads(listed.stdout)}
    assert servers["fake"]["state"] == "connected"
    assert "mcp_fake_echo" in servers["fake"]["tools"]
    assert servers["hang"]["state"] == "failed"
    assert servers["hang"]["last_error"] == "no answer within 2 s"
    assert servers["later"] == {
        "server": "later",
        "transport": "http",
        "state": "disabled",
        "tools": [],
        "refused": [],
        "last_error": None,
    }
    assert probed.returncode == 0, probed.stderr
    assert "mcp_fake_wipe" in probed.stdout
    assert "[destructive]" in probed.stdout
    assert json.loads(probed.stdout[probed.stdout.index("{") :]) == {"success": True, "result": "5"}
    assert failed.returncode == 1
    assert failed.stderr.strip() == (
        "chatgate: MCP server 'hang': not connected (no answer within 2 s)"
    )


def test_status_names_the_configured_servers(home: Path) -> None:
    write_config(
        home,
        stdio_block("fake"),
        http_block("later", "http://127.0.0.1:9/mcp", enabled=False),
    )
    result = chatgate("status", "--json")

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["mcp_servers"] == {
        "fake": "stdio",
        "later": "http (disabled)",
    }


async def test_status_shows_each_servers_live_state_from_the_running_gateway(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(
        home,
        stdio_block("fake", include=["echo", "add"]),
        http_block("gone", f"http://127.0.0.1:{free_port()}/mcp"),
    )
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await reached(gw, "fake", "connected")
        port = gw.base_url.rsplit(":", 1)[1].rstrip("/")
        env = cli_env(CHATGATE_SERVER__PORT=port)
        shown, as_json = await asyncio.gather(
            asyncio.to_thread(chatgate, "status", env=env),
            asyncio.to_thread(chatgate, "status", "--json", env=env),
        )
    nobody = chatgate("status", env=cli_env(CHATGATE_SERVER__PORT=str(free_port())))

    assert shown.returncode == 0, shown.stderr
    assert "  fake (stdio): connected, 2 tools" in shown.stdout.splitlines()
    assert "  gone (http): not connected" in shown.stdout.splitlines()
    assert json.loads(as_json.stdout)["mcp_live"] == {
        "fake": {"connected": True, "tools": 2},
        "gone": {"connected": False, "tools": 0},
    }
    assert nobody.returncode == 0, nobody.stderr
    assert "  fake (stdio)" in nobody.stdout.splitlines()
    assert "live state: no gateway answered at http://127.0.0.1:" in nobody.stdout
