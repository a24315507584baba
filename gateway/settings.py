"""The typed settings of one chatgate profile: the core's sections and the base model.

``Settings`` holds the sections every gateway has (``server``, ``logging``, ``database``,
``model``, ``streaming``, ``sessions``, ``prompt``, ``recovery``, ``tools``, ``pricing``,
``budgets``). Features and
platforms bring sections of their own, declared in their own modules; ``gateway.config``
composes them into the model a profile is read into, so a section is reached by its
model, not by a name written here:
``settings.section(MemorySettings)``, or for a platform ``settings.platform("name")``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, Field, PrivateAttr, SecretStr, field_validator

from adapters.platform import PlatformSpec, Section, split_commas
from core.errors import ConfigError
from core.messages import InboundMessage
from core.models.base import ModelConfig
from core.prompt.builder import CallerContext
from gateway.tool_settings import ToolSettings
from gateway.usage_settings import BudgetSettings, PricingSettings

S = TypeVar("S", bound=BaseModel)

__all__ = ["CORE_ENV", "Section", "Settings", "split_commas"]


class ServerSettings(Section):
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # On SIGTERM/SIGINT: how long running turns may finish before they are cancelled
    # (and left pending for the next start).
    shutdown_grace: float = Field(default=20.0, ge=0, le=3600)
    # A client has this long to send a request's head and body, from its first byte
    # (or from connecting); then the connection is closed.
    read_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    # Connections served at once; past it requests are answered 503.
    max_connections: int = Field(default=1000, ge=1, le=1_000_000)


class LoggingSettings(Section):
    # Let library loggers that carry message text log at DEBUG (secrets stay redacted).
    log_bodies: bool = False
    # text: one line for people; json: one JSON object a line (ts, level, logger, msg,
    # turn_id, exc). Both carry the turn id (``gateway.log_format``).
    format: Literal["text", "json"] = "text"


class TelemetrySettings(Section):
    # OTLP/HTTP collector base URL for OpenTelemetry traces and GenAI metrics (needs the
    # ``otel`` extra); empty: no telemetry. ``gateway.otel`` says what is sent.
    otlp_endpoint: str = ""


class DatabaseSettings(Section):
    # Empty means SQLite at $CHATGATE_HOME/state.db.
    url: str = ""
    busy_timeout_ms: int = Field(default=5000, ge=0)
    # Group commit: how many queued writes share one transaction at most.
    max_batch: int = Field(default=256, ge=1, le=10_000)
    # PostgreSQL: how often ``chatgate run`` checks the connection holding its lease.
    lease_check_seconds: float = Field(default=5.0, gt=0, le=300)

    @field_validator("url")
    @classmethod
    def _known_driver(cls, value: str) -> str:
        allowed = ("sqlite", "postgresql", "postgres")
        if value and value.split(":", 1)[0].split("+", 1)[0] not in allowed:
            raise ValueError("must be a sqlite:// or postgresql:// URL")
        return value


class ModelSettings(Section):
    provider: Literal["auto", "offline", "openai", "anthropic"] = "auto"
    name: str = ""
    base_url: str | None = None
    api_key: SecretStr | None = None
    anthropic_api_key: SecretStr | None = None
    timeout_seconds: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    retry_base_seconds: float = Field(default=0.5, ge=0)
    retry_max_seconds: float = Field(default=30.0, ge=0)
    stream: bool = False
    max_tokens: int = Field(default=4096, ge=1)
    # One bound on a model call, retries and their pauses included.
    call_timeout_seconds: float = Field(default=90.0, gt=0)
    # Tell the chat once that the answer is slow when a turn has not answered this
    # soon (0: never).
    slow_notice_seconds: float = Field(default=20.0, ge=0)
    # The model sees images (photos, image files): they are sent as image parts. False:
    # it gets a line naming each image instead.
    vision: bool = True


class StreamingSettings(Section):
    # Show replies while they are generated, where the chat's platform streams (each
    # platform's own ``streaming: auto | off``); false wins over every platform. Where
    # a reply streams, the model is called with streaming whatever ``model.stream`` says.
    enabled: bool = True


class SessionSettings(Section):
    group_sessions_per_user: bool = True
    max_iterations: int = Field(default=20, ge=1, le=200)
    # Tool calls a turn may run; the calls past it are answered "not run" and the turn
    # stops with one line.
    max_tool_calls_per_turn: int = Field(default=50, ge=1, le=10_000)
    idle_worker_seconds: float = Field(default=300.0, gt=0)
    # Transcripts kept in memory, in (estimated) bytes; the least recently used go first
    # and are read back from the SessionDB when their chat speaks again.
    cache_bytes: int = Field(default=256 * 1024 * 1024, ge=0)
    # The longest a turn (model calls and tools) may run before it is failed.
    turn_timeout_seconds: float = Field(default=300.0, gt=0)


class RecoverySettings(Section):
    # A turn whose outcome the store cannot write (disk full, locked, read-only) is
    # retried until it commits or its message is this old (seconds); then its chat gets
    # one notice that it could not be answered.
    max_age: float = Field(default=3600.0, gt=0)
    # While the store cannot write, a probe write runs with backoff up to this pause
    # (seconds); turns waiting to commit retry at most this far apart too.
    probe_max_seconds: float = Field(default=5.0, gt=0, le=3600)


class PromptSettings(Section):
    identity: str = ""
    # The folder whose project context (AGENTS.md, CLAUDE.md, ...) every session reads.
    workspace: Path | None = None
    # Per chat, keyed "platform:chat_id"; wins over the route's and the profile's.
    chat_workspaces: dict[str, Path] = Field(default_factory=dict)
    context_max_chars: int = Field(default=20_000, ge=1000, le=200_000)


class Settings(Section):
    """The whole configuration of one chatgate profile (see the module docstring)."""

    # Filled by ``gateway.config.settings_model`` on the composed model.
    section_names: ClassVar[Mapping[type[BaseModel], str]] = {}
    platforms: ClassVar[Mapping[str, PlatformSpec[Any]]] = {}

    home: Path
    server: ServerSettings = Field(default_factory=ServerSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    streaming: StreamingSettings = Field(default_factory=StreamingSettings)
    sessions: SessionSettings = Field(default_factory=SessionSettings)
    prompt: PromptSettings = Field(default_factory=PromptSettings)
    recovery: RecoverySettings = Field(default_factory=RecoverySettings)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    pricing: PricingSettings = Field(default_factory=PricingSettings)
    budgets: BudgetSettings = Field(default_factory=BudgetSettings)
    # How to read these settings again from where they came from (``gateway.config``).
    _source: Callable[[], Settings] | None = PrivateAttr(default=None)

    def __eq__(self, other: object) -> bool:
        """Equal settings hold equal values; where they were read from is no part of it."""
        if not isinstance(other, Settings):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable, as every pydantic model

    def read_again_with(self, source: Callable[[], Settings]) -> None:
        self._source = source

    def read_again(self) -> Settings | None:
        """These settings as their config file, environment and options give them now
        (a ``ConfigError`` when they no longer validate); None when they were not read
        from a file (built in code)."""
        return self._source() if self._source is not None else None

    def section(self, model: type[S]) -> S:
        """The section whose model is ``model`` (a feature's or a platform's)."""
        name = self.section_names.get(model)
        value = getattr(self, name, None) if name is not None else None
        if not isinstance(value, model):
            raise KeyError(f"{model.__name__} is not a section of these settings")
        return value

    def platform(self, name: str) -> BaseModel:
        """The ``<name>:`` section of the platform called ``name``."""
        value = getattr(self, name, None) if name in self.platforms else None
        if not isinstance(value, BaseModel):
            raise KeyError(f"no platform {name!r} in these settings")
        return value

    @property
    def media_dir(self) -> Path:
        """The media store (``core.media.store``): files sent and received, by hash."""
        return self.home / "media"

    @property
    def database_url(self) -> str:
        return self.database.url or f"sqlite+aiosqlite:///{self.home / 'state.db'}"

    def caller_context(self, msg: InboundMessage) -> CallerContext:
        """The system message and workspace a new session of ``msg``'s chat starts with:
        the chat's workspace wins over the platform's (a webhook route's), which wins
        over the profile's."""
        spec = self.platforms.get(msg.platform)
        given = CallerContext()
        if spec is not None and spec.caller_context is not None:
            given = spec.caller_context(self.platform(msg.platform), msg)
        workspace = (
            self.prompt.chat_workspaces.get(f"{msg.platform}:{msg.chat_id}")
            or given.workspace
            or self.prompt.workspace
        )
        return CallerContext(
            system_message=given.system_message,
            workspace=workspace.expanduser() if workspace else None,
        )

    def model_config_for_core(self) -> ModelConfig:
        """Resolve ``model.provider: auto`` and map the settings onto ``ModelConfig``."""
        m = self.model
        provider = m.provider
        if provider == "auto":
            provider = _auto_provider(m)
        key = m.anthropic_api_key if provider == "anthropic" else m.api_key
        if provider == "anthropic" and key is None:
            raise ConfigError("model.anthropic_api_key", "required for provider anthropic")
        if provider == "openai" and key is None and not m.base_url:
            raise ConfigError("model.api_key", "required for provider openai without base_url")
        return ModelConfig(
            provider=provider,
            model=m.name or _default_model(provider),
            base_url=m.base_url,
            api_key=key.get_secret_value() if key else None,
            timeout_seconds=m.timeout_seconds,
            max_retries=m.max_retries,
            retry_base_seconds=m.retry_base_seconds,
            retry_max_seconds=m.retry_max_seconds,
            stream=m.stream,
            max_tokens=m.max_tokens,
            call_timeout_seconds=m.call_timeout_seconds,
            media_dir=self.media_dir,
            vision=m.vision,
        )


def _auto_provider(m: ModelSettings) -> Literal["offline", "openai", "anthropic"]:
    if m.base_url or m.api_key:
        return "openai"
    if m.anthropic_api_key:
        return "anthropic"
    return "offline"


def _default_model(provider: str) -> str:
    return {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}.get(provider, "offline")


# Environment variable -> dotted setting of the core's sections; features and platforms
# name their own. Env wins over config.yaml.
CORE_ENV: dict[str, str] = {
    "CHATGATE_HOST": "server.host",
    "CHATGATE_PORT": "server.port",
    "CHATGATE_LOG_LEVEL": "server.log_level",
    "CHATGATE_LOG_BODIES": "logging.log_bodies",
    "CHATGATE_LOG_FORMAT": "logging.format",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "telemetry.otlp_endpoint",
    "CHATGATE_DATABASE_URL": "database.url",
    "CHATGATE_RECOVERY__MAX_AGE": "recovery.max_age",
    "CHATGATE_RECOVERY__PROBE_MAX_SECONDS": "recovery.probe_max_seconds",
    "CHATGATE_MODEL": "model.name",
    "CHATGATE_MODEL_PROVIDER": "model.provider",
    "OPENAI_BASE_URL": "model.base_url",
    "OPENAI_API_KEY": "model.api_key",
    "ANTHROPIC_API_KEY": "model.anthropic_api_key",
}
