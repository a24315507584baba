"""The ``telegram:`` settings section, and the ones that only make sense together."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, field_validator

from adapters.platform import ChatPolicySettings, split_commas
from core.errors import ConfigError


class TelegramSettings(ChatPolicySettings):
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
    # Show replies while they are generated (drafts in private chats, an edited message
    # in groups); the global ``streaming.enabled: false`` wins.
    streaming: Literal["auto", "off"] = "auto"
    # Preview updates the bot may make a second, across all chats (Telegram allows a bot
    # about 30 messages a second; each chat gets at most one update a second).
    stream_updates_per_second: float = Field(default=20.0, gt=0, le=30)

    @field_validator("allowed_users", "allowed_chats", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        return split_commas(value)

    @field_validator("streaming", mode="before")
    @classmethod
    def _on_off(cls, value: object) -> object:
        # YAML reads a bare ``off`` (and ``on``) as a boolean.
        if isinstance(value, bool):
            return "auto" if value else "off"
        return value

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
