"""The ``discord:`` settings section."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from adapters.platform import ChatPolicySettings, split_commas
from adapters.streaming_mode import StreamingMode


class DiscordSettings(ChatPolicySettings):
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
    # Show replies while they are generated: one message, sent then edited (auto), or
    # send them whole (off); streaming.enabled: false turns it off too.
    streaming: StreamingMode = "auto"
    # Preview edits a second across all chats (each chat gets at most one a second).
    # Discord allows a bot 50 requests a second in all, and 5 sends or edits per
    # channel every 5 s: 10 keeps previews to a fifth of the global budget, leaving the
    # rest to final replies, typing and history reads, so previews never cause a 429.
    stream_updates_per_second: float = Field(default=10.0, ge=1, le=50)

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
