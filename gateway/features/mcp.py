"""Tools from MCP servers: ``mcp.servers.<name>`` in config.yaml, each server's tools
offered to the model as ``mcp_<server>_<tool>``.

Servers connect in the background (``core.mcp.manager``): start-up never waits for
one. ``/status`` and ``/metrics`` show each server's state and tool count;
``/reload-mcp`` (owners) reconnects every server from the current config (the file the
gateway started with, its environment and options).
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Self

import yaml
from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator

from adapters.platform import Section
from core.commands import Command, CommandHost, CommandReply
from core.errors import ConfigError
from core.mcp.naming import SERVER_NAME
from core.mcp.servers import STATES, ServerConfig
from core.store.records import InboxItem, SessionRow
from gateway.features.base import Contribution, FeatureContext, FeatureSpec, Metric
from gateway.settings import Settings

if TYPE_CHECKING:  # the manager imports the MCP SDK: only a running gateway needs it
    from core.mcp.manager import McpManager, ServerStatus

STARTER_CONFIG = """\
mcp:
  servers: {}              # MCP servers whose tools the agent may call, by name:
  #   files:               # tools reach the model as mcp_files_<tool>
  #     command: npx       # stdio: the command that runs the server...
  #     args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/shared"]
  #     env: {API_TOKEN: "${FILES_TOKEN}"}  # ${NAME}: from the gateway's environment
  #     cwd: /srv
  #     timeout_seconds: 60  # bounds the handshake and each tool call
  #     include: ["read_*", "list_*"]  # fnmatch globs over the server's tool names
  #     exclude: ["*delete*"]
  #   search:
  #     url: https://mcp.example.com/mcp  # ...or Streamable HTTP
  #     headers: {Authorization: "Bearer ${SEARCH_TOKEN}"}
  #     enabled: true
  max_result_chars: 20000  # a longer tool result is cut, with a marker saying how much
"""

# ``${NAME}`` in an env or header value: the gateway's environment variable NAME.
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _resolved(value: SecretStr) -> SecretStr:
    def lookup(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ValueError(f"${{{name}}} is not set in the environment")
        return os.environ[name]

    return SecretStr(_REFERENCE.sub(lookup, value.get_secret_value()))


class McpServerSettings(Section):
    """One MCP server: ``command`` (stdio) or ``url`` (Streamable HTTP), not both."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    # Values are secrets (redacted from every log line); ``${NAME}`` reads the environment.
    env: dict[str, SecretStr] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    enabled: bool = True
    # Bounds the handshake, the tool listing and each tool call.
    timeout_seconds: float = Field(default=60, gt=0, le=3600)
    # fnmatch globs over the server's own tool names: offered if it matches an include
    # (when any) and no exclude.
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)

    @field_validator("env", "headers")
    @classmethod
    def _references(cls, values: dict[str, SecretStr]) -> dict[str, SecretStr]:
        return {key: _resolved(value) for key, value in values.items()}

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError("set exactly one of command (stdio) or url (Streamable HTTP)")
        if self.url is not None:
            if not self.url.startswith(("http://", "https://")):
                raise ValueError("url must start with http:// or https://")
            if self.args or self.env or self.cwd is not None:
                raise ValueError("args, env and cwd are for a command, not a url")
        elif self.headers:
            raise ValueError("headers are for a url, not a command")
        return self


class McpSettings(Section):
    """MCP servers whose tools the agent may call."""

    servers: dict[str, McpServerSettings] = Field(default_factory=dict)
    # Characters of one tool result the model reads; the rest is cut, with a marker.
    max_result_chars: int = Field(default=20_000, ge=500, le=1_000_000)

    @field_validator("servers")
    @classmethod
    def _names(cls, servers: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        for name in servers:
            if not SERVER_NAME.match(name):
                raise ValueError(
                    f"server name {name!r} must be 1-32 letters, digits, _ or -, "
                    "starting with a letter or digit"
                )
        return servers


def server_configs(settings: McpSettings) -> list[ServerConfig]:
    """The core's view of ``mcp.servers``, secrets revealed for the subprocess."""
    return [_config(name, s) for name, s in settings.servers.items()]


def _config(name: str, s: McpServerSettings) -> ServerConfig:
    return ServerConfig(
        name=name,
        command=s.command,
        args=tuple(s.args),
        env={k: v.get_secret_value() for k, v in s.env.items()},
        cwd=s.cwd,
        url=s.url,
        headers={k: v.get_secret_value() for k, v in s.headers.items()},
        enabled=s.enabled,
        timeout_seconds=s.timeout_seconds,
        include=tuple(s.include),
        exclude=tuple(s.exclude),
    )


def chatgate_version() -> str:
    try:
        return version("chatgate")
    except PackageNotFoundError:
        return ""


# Re-reads mcp.servers when /reload-mcp asks (a ConfigError for a broken config.yaml).
SettingsSource = Callable[[], McpSettings]


class Mcp:
    def __init__(self, settings: Settings, source: SettingsSource | None = None) -> None:
        self._settings = settings
        self._source = source or (lambda: _reread(settings))
        self.manager: McpManager | None = None

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        m = self._settings.section(McpSettings)
        from core.mcp.manager import McpManager

        manager = McpManager(
            ctx.core.tools,
            server_configs(m),
            max_result_chars=m.max_result_chars,
            version=chatgate_version(),
        )
        async with manager:
            self.manager = manager
            yield Contribution(
                commands=[self._reload_command(manager)],
                status_lines=[lambda row: _status_lines(manager, row)],
                metrics=lambda: _metrics(manager),
            )

    def _reload_command(self, manager: McpManager) -> Command:
        async def reload_mcp(host: CommandHost, item: InboxItem, args: str) -> CommandReply:
            if not host.is_owner(item.message):
                return CommandReply("Only the bot's owners can reload the MCP servers.")
            try:
                m = self._source()
            except ConfigError as exc:
                return CommandReply(f"config.yaml has an error, nothing was reloaded: {exc}")
            configs = server_configs(m)
            await manager.reload(configs)
            await manager.settled()
            return CommandReply(reload_text(manager.statuses()))

        return Command("reload-mcp", "reconnect the MCP servers from config.yaml", reload_mcp)


def _reread(settings: Settings) -> McpSettings:
    """The ``mcp:`` section as the gateway's config file, environment and options give
    it now; settings built in code fall back to the home's config.yaml alone."""
    again = settings.read_again()
    if again is not None:
        return again.section(McpSettings)
    path = settings.home / "config.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, yaml.YAMLError):
        raise ConfigError(str(path), "cannot be read as YAML") from None
    section = data.get("mcp") if isinstance(data, dict) else None
    try:
        return McpSettings.model_validate(section or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(["mcp", *(str(part) for part in first["loc"])])
        raise ConfigError(key, first["msg"]) from None


def describe(status: ServerStatus) -> str:
    """``name: state, N tools`` and the last error, for people."""
    count = len(status.tools)
    text = f"{status.name} ({status.transport}): {status.state}, {count} tool{'s'[: count != 1]}"
    if status.refused:
        text += f" ({len(status.refused)} refused: clashing names)"
    if status.last_error and status.state != "connected":
        text += f"; last error: {status.last_error}"
    return text


def reload_text(statuses: list[ServerStatus]) -> str:
    if not statuses:
        return "No MCP servers are configured (mcp.servers in config.yaml)."
    lines = ["MCP servers reloaded; new sessions see their tools:"]
    return "\n".join([*lines, *(f"- {describe(s)}" for s in statuses)])


async def _status_lines(manager: McpManager, row: SessionRow) -> list[str]:
    statuses = manager.statuses()
    return [f"MCP {describe(s)}" for s in statuses]


def _metrics(manager: McpManager) -> Iterator[Metric]:
    statuses = manager.statuses()
    by_state: dict[str, float] = {
        state: float(sum(s.state == state for s in statuses)) for state in STATES
    }
    yield Metric("chatgate_mcp_servers", "MCP servers by state", "gauge", by_state, "status")
    connected = {s.name: float(s.state == "connected") for s in statuses}
    yield Metric(
        "chatgate_mcp_server_connected",
        "1 while an MCP server is connected",
        "gauge",
        connected,
        "server",
    )
    tools = {s.name: float(len(s.tools)) for s in statuses}
    yield Metric(
        "chatgate_mcp_server_tools", "Tools offered by an MCP server", "gauge", tools, "server"
    )


def build(settings: Settings) -> Mcp:
    # Always on: with no servers it costs nothing, and /reload-mcp can add the first one.
    return Mcp(settings)


SPEC = FeatureSpec("mcp", build, settings=McpSettings, starter_config=STARTER_CONFIG)
