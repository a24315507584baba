"""Settings sections of the chat platforms (``telegram:``, ``discord:``).

Part of the gateway's typed configuration (``gateway.config``), kept apart because
each platform brings many settings of its own; ``Section`` is the base of every
section there too.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from core.errors import ConfigError


class Section(BaseModel):
    """A settings section: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


def split_commas(value: object) -> object:
    """A list from the environment: ``"12345,@alice"`` -> ``["12345", "@alice"]``."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class TelegramSettings(Section):
    """The Telegram adapter: on when a bot token is set."""

    bot_token: SecretStr | None = None
    # A self-hosted Bot API server (or a test fake): ".../bot" and ".../file/bot".
    base_url: str = "https://api.telegram.org/bot"
    base_file_url: str = "https://api.telegram.org/file/bot"
    mode: Literal["polling", "webhook"] = "polling"
    # Webhook mode: the public HTTPS URL Telegram posts to; it must end in /telegram/<path>.
    webhook_url: str = ""
    webhook_secret: SecretStr | None = None
    webhook_path: str = Field(default="updates", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    # Updates older than this when they reach us are skipped (one notice per chat).
    max_backlog_age: float = Field(default=3600, gt=0)
    # In groups, answer only when mentioned, replied to or sent /command@thisbot.
    require_mention: bool = True
    handle_edits: bool = False
    # Who may talk to the bot: user ids or usernames, and chat ids.
    allowed_users: list[str] = Field(default_factory=list)
    allowed_chats: list[str] = Field(default_factory=list)
    allow_all_users: bool = False
    max_file_bytes: int = Field(default=20_000_000, ge=0)
    poll_timeout_seconds: int = Field(default=30, ge=0, le=50)

    @field_validator("allowed_users", "allowed_chats", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        return split_commas(value)

    @property
    def enabled(self) -> bool:
        return self.bot_token is not None and bool(self.bot_token.get_secret_value())

    @property
    def file_url(self) -> str:
        """``base_file_url``, or the one beside a custom ``base_url`` (``.../file/bot``)."""
        default = TelegramSettings.model_fields["base_file_url"].default
        custom_api = self.base_url != TelegramSettings.model_fields["base_url"].default
        if self.base_file_url == default and custom_api and self.base_url.endswith("/bot"):
            return self.base_url[: -len("/bot")] + "/file/bot"
        return self.base_file_url


class DiscordSettings(Section):
    """The Discord adapter: on when a bot token is set."""

    bot_token: SecretStr | None = None
    # A proxy (or a test fake): the REST base and the gateway WebSocket URL.
    api_base: str = "https://discord.com/api/v10"
    gateway_url: str = "wss://gateway.discord.gg/"
    # The privileged Message Content intent; without it only mentions and DMs carry text.
    message_content: bool = True
    # In guild channels, answer only when mentioned or replied to.
    require_mention: bool = True
    # Each member of a guild channel gets their own session; unset follows
    # sessions.group_sessions_per_user. Threads are always shared by their members.
    group_sessions_per_user: bool | None = None
    # Who may talk to the bot (any one admits): user ids or usernames, role ids, channel
    # or category ids (admitting everyone there, threads included), or everyone. Roles
    # and channels by id only: their names are not unique across servers.
    allowed_users: list[str] = Field(default_factory=list)
    allowed_roles: list[str] = Field(default_factory=list)
    allowed_channels: list[str] = Field(default_factory=list)
    allow_all_users: bool = False
    # Messages from other bots (never its own) reach the agent.
    allow_bots: bool = False
    # After a restart or new session, messages this recent are read from history.
    catch_up_max_age: float = Field(default=3600, ge=0)
    max_file_bytes: int = Field(default=20_000_000, ge=0)
    # With no event for this long while in a guild, probe the gateway; reconnect if it
    # does not answer (0: never).
    watchdog_silence_seconds: float = Field(default=300, ge=0)
    # Register the chat commands as slash commands at start.
    slash_commands: bool = True

    @field_validator("allowed_users", "allowed_roles", "allowed_channels", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        return split_commas(value)

    @field_validator("allowed_roles", "allowed_channels")
    @classmethod
    def _ids_only(cls, value: list[str]) -> list[str]:
        for item in value:
            if not item.isdigit():
                raise ValueError(
                    f"{item!r} is not an id: names are not unique across servers "
                    "(Developer Mode in Discord adds Copy ID to every menu)"
                )
        return value

    @property
    def enabled(self) -> bool:
        return self.bot_token is not None and bool(self.bot_token.get_secret_value())


def check_telegram(t: TelegramSettings) -> None:
    if not t.enabled or t.mode != "webhook":
        return
    if not t.webhook_url:
        raise ConfigError("telegram.webhook_url", "required in webhook mode")
    if not t.webhook_url.rstrip("/").endswith(f"/telegram/{t.webhook_path}"):
        raise ConfigError(
            "telegram.webhook_url",
            f"must end in /telegram/{t.webhook_path} (telegram.webhook_path), where the "
            "gateway receives updates",
        )
    if t.webhook_secret is None or not t.webhook_secret.get_secret_value():
        raise ConfigError(
            "telegram.webhook_secret",
            "required in webhook mode (Telegram sends it with every update; set "
            "CHATGATE_TELEGRAM_WEBHOOK_SECRET)",
        )
