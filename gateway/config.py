"""Typed settings: ``$CHATGATE_HOME/config.yaml`` first, environment variables over it.

Every setting has a safe default, so an empty home directory starts the gateway on
SQLite, the webhook adapter and the offline model. ``load_settings`` raises
``ConfigError`` naming the first invalid key in dotted form.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import Field, SecretStr, ValidationError, field_validator

from core.errors import ConfigError
from core.memory.profile import MemoryLimits
from core.messages import InboundMessage
from core.models.base import ModelConfig
from core.prompt.builder import CallerContext
from gateway.platform_settings import DiscordSettings, TelegramSettings, check_telegram
from gateway.platform_settings import Section as _Section


class ServerSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    log_level: Literal["debug", "info", "warning", "error"] = "info"


class DatabaseSettings(_Section):
    # Empty means SQLite at $CHATGATE_HOME/state.db.
    url: str = ""
    busy_timeout_ms: int = Field(default=5000, ge=0)
    # Group commit: how many queued writes share one transaction at most.
    max_batch: int = Field(default=256, ge=1, le=10_000)

    @field_validator("url")
    @classmethod
    def _known_driver(cls, value: str) -> str:
        allowed = ("sqlite", "postgresql", "postgres")
        if value and value.split(":", 1)[0].split("+", 1)[0] not in allowed:
            raise ValueError("must be a sqlite:// or postgresql:// URL")
        return value


class ModelSettings(_Section):
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


class WebhookRoute(_Section):
    secret: SecretStr | None = None
    system_message: str | None = None
    workspace: Path | None = None


class WebhookSettings(_Section):
    enabled: bool = True
    secret: SecretStr | None = None
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    max_skew_seconds: int = Field(default=300, ge=1)
    wait_timeout_seconds: float = Field(default=120.0, gt=0)
    routes: dict[str, WebhookRoute] = Field(default_factory=dict)


class SessionSettings(_Section):
    group_sessions_per_user: bool = True
    max_iterations: int = Field(default=20, ge=1, le=200)
    idle_worker_seconds: float = Field(default=300.0, gt=0)


class MemorySettings(_Section):
    enabled: bool = True
    memory_chars: int = Field(default=2200, ge=100, le=100_000)
    user_chars: int = Field(default=1375, ge=100, le=100_000)
    user_scope: Literal["profile", "per_user"] = "profile"
    # Stage every memory write for a person to approve (/memory approve, chatgate memory).
    write_approval: bool = False
    # Who may /memory approve and /memory reject in chat ("platform:user_id"); empty: anyone.
    approvers: list[str] = Field(default_factory=list)
    # An external memory provider beside the built-in files, by name ("" = none).
    provider: str = ""
    provider_options: dict[str, Any] = Field(default_factory=dict)
    # A background memory review after this many user turns without a memory write (0: off).
    nudge_interval: int = Field(default=10, ge=0, le=1000)

    def limits(self) -> MemoryLimits:
        return MemoryLimits(self.memory_chars, self.user_chars, self.user_scope)


class CompactionConfig(_Section):
    enabled: bool = True
    # The model's context window in tokens, and the share of it that triggers compaction.
    context_window: int = Field(default=128_000, ge=1_000)
    threshold: float = Field(default=0.8, gt=0, le=1)
    keep_recent_messages: int = Field(default=10, ge=0, le=1_000)


class SkillsSettings(_Section):
    enabled: bool = True
    # Skill names the model never sees (they stay on disk).
    disabled: list[str] = Field(default_factory=list)
    # Stage every skill_manage batch in pending/skills/ until a person approves it.
    write_approval: bool = False
    # A background skill review after this many tool iterations without skill_manage (0: off).
    nudge_interval: int = Field(default=10, ge=0, le=1000)


class ReviewSettings(_Section):
    """The background review that runs after a reply, every ~10 turns of a session."""

    enabled: bool = True
    # Reviews running at once across the gateway; they never hold a chat's lane.
    concurrency: int = Field(default=1, ge=1, le=32)
    max_iterations: int = Field(default=16, ge=1, le=64)
    # Tell the chat what a review changed ("Memory updated: ...").
    notify: bool = True


class CuratorSettings(_Section):
    """The idle-gated pass that stales and archives skills the agent created itself."""

    enabled: bool = True
    interval_hours: float = Field(default=168, gt=0)
    min_idle_hours: float = Field(default=2, ge=0)
    stale_after_days: float = Field(default=30, gt=0)
    archive_after_days: float = Field(default=90, gt=0)
    # A model pass that merges near-duplicate agent-created skills into umbrella skills.
    consolidate: bool = False
    keep_backups: int = Field(default=5, ge=1, le=100)
    # How often the gates are checked.
    check_minutes: float = Field(default=60, gt=0)


class CronSettings(_Section):
    """Scheduled prompts whose output is delivered to a chat or a file."""

    enabled: bool = True
    # How often due jobs are looked for (a job created in chat also wakes the scheduler).
    tick_seconds: float = Field(default=30, ge=1, le=3600)
    # Jobs one chat may hold, so a runaway model cannot fill the table.
    max_jobs_per_chat: int = Field(default=50, ge=1, le=10_000)
    # Runs at once: the rest wait, so a 09:00 rush cannot crowd out people's replies.
    concurrency: int = Field(default=2, ge=1, le=64)
    # The zone five-field cron expressions and ISO times without an offset are read in.
    timezone: str = "UTC"

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ValueError, ZoneInfoNotFoundError):
            raise ValueError(
                f"unknown time zone {value!r} (use an IANA name such as UTC)"
            ) from None
        return value


class SearchSettings(_Section):
    enabled: bool = True
    # session_search scope="all" reaches every chat: only for a single-owner deployment.
    allow_global: bool = False
    # "platform:user_id" of the deployment's owners, who may use scope="all" anyway.
    owners: list[str] = Field(default_factory=list)


class PromptSettings(_Section):
    identity: str = ""
    # The folder whose project context (AGENTS.md, CLAUDE.md, ...) every session reads.
    workspace: Path | None = None
    # Per chat, keyed "platform:chat_id"; wins over the route's and the profile's.
    chat_workspaces: dict[str, Path] = Field(default_factory=dict)
    context_max_chars: int = Field(default=20_000, ge=1000, le=200_000)


class Settings(_Section):
    """The whole configuration of one chatgate profile."""

    home: Path
    server: ServerSettings = Field(default_factory=ServerSettings)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    webhook: WebhookSettings = Field(default_factory=WebhookSettings)
    sessions: SessionSettings = Field(default_factory=SessionSettings)
    prompt: PromptSettings = Field(default_factory=PromptSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    curator: CuratorSettings = Field(default_factory=CuratorSettings)
    cron: CronSettings = Field(default_factory=CronSettings)
    telegram: TelegramSettings = Field(default_factory=TelegramSettings)
    discord: DiscordSettings = Field(default_factory=DiscordSettings)

    @property
    def database_url(self) -> str:
        return self.database.url or f"sqlite+aiosqlite:///{self.home / 'state.db'}"

    def caller_context(self, msg: InboundMessage) -> CallerContext:
        """The system message and workspace a new session of ``msg``'s chat starts with."""
        route = self.webhook.routes.get(msg.route or "") if msg.platform == "webhook" else None
        workspace = (
            self.prompt.chat_workspaces.get(f"{msg.platform}:{msg.chat_id}")
            or (route.workspace if route else None)
            or self.prompt.workspace
        )
        return CallerContext(
            system_message=route.system_message if route else None,
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
        )


def _auto_provider(m: ModelSettings) -> Literal["offline", "openai", "anthropic"]:
    if m.base_url or m.api_key:
        return "openai"
    if m.anthropic_api_key:
        return "anthropic"
    return "offline"


def _default_model(provider: str) -> str:
    return {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}.get(provider, "offline")


# Environment variable -> dotted setting. Env wins over config.yaml.
ENV_OVERRIDES: dict[str, str] = {
    "CHATGATE_HOST": "server.host",
    "CHATGATE_PORT": "server.port",
    "CHATGATE_LOG_LEVEL": "server.log_level",
    "CHATGATE_DATABASE_URL": "database.url",
    "CHATGATE_MODEL": "model.name",
    "CHATGATE_MODEL_PROVIDER": "model.provider",
    "OPENAI_BASE_URL": "model.base_url",
    "OPENAI_API_KEY": "model.api_key",
    "ANTHROPIC_API_KEY": "model.anthropic_api_key",
    "CHATGATE_WEBHOOK_SECRET": "webhook.secret",
    "TELEGRAM_BOT_TOKEN": "telegram.bot_token",
    "CHATGATE_TELEGRAM_BASE_URL": "telegram.base_url",
    "CHATGATE_TELEGRAM_BASE_FILE_URL": "telegram.base_file_url",
    "CHATGATE_TELEGRAM_MODE": "telegram.mode",
    "CHATGATE_TELEGRAM_WEBHOOK_URL": "telegram.webhook_url",
    "CHATGATE_TELEGRAM_WEBHOOK_SECRET": "telegram.webhook_secret",
    "TELEGRAM_ALLOWED_USERS": "telegram.allowed_users",
    "TELEGRAM_ALLOWED_CHATS": "telegram.allowed_chats",
    "TELEGRAM_ALLOW_ALL_USERS": "telegram.allow_all_users",
    "DISCORD_BOT_TOKEN": "discord.bot_token",
    "CHATGATE_DISCORD_API_BASE": "discord.api_base",
    "CHATGATE_DISCORD_GATEWAY_URL": "discord.gateway_url",
    "DISCORD_ALLOWED_USERS": "discord.allowed_users",
    "DISCORD_ALLOWED_ROLES": "discord.allowed_roles",
    "DISCORD_ALLOWED_CHANNELS": "discord.allowed_channels",
    "DISCORD_ALLOW_ALL_USERS": "discord.allow_all_users",
}


def default_home() -> Path:
    return Path(os.environ.get("CHATGATE_HOME") or Path.home() / ".chatgate").expanduser()


def load_settings(home: Path | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Read ``config.yaml`` under ``home`` and apply environment overrides."""
    env = os.environ if env is None else env
    home = (home or default_home()).expanduser().resolve()
    data = _read_yaml(home / "config.yaml")
    for name, dotted in ENV_OVERRIDES.items():
        value = env.get(name)
        if value:
            _set_dotted(data, dotted, value)
    data["home"] = home
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise _config_error(exc) from None
    settings.model_config_for_core()  # provider settings that only make sense together
    check_telegram(settings.telegram)
    return settings


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(str(path), f"not valid YAML{where}") from None
    except OSError as exc:
        raise ConfigError(str(path), f"cannot be read: {exc.strerror}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(str(path), "must be a mapping of settings")
    return loaded


def _set_dotted(data: dict[str, Any], dotted: str, value: str) -> None:
    *parents, leaf = dotted.split(".")
    node = data
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[leaf] = value


def _config_error(exc: ValidationError) -> ConfigError:
    first = exc.errors()[0]
    key = ".".join(str(p) for p in first["loc"]) or "config"
    reason = first["msg"]
    if first["type"] == "extra_forbidden":
        reason = "unknown setting"
    return ConfigError(key, reason)
