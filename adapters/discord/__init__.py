"""Discord, on discord.py: DMs, guild channels, threads and slash commands (``adapter``).

On when ``DISCORD_BOT_TOKEN`` (``discord.bot_token``) is set. discord.py is imported
only then, when the adapter is built.
"""

from __future__ import annotations

import logging

from adapters.base import Adapter
from adapters.discord.doctor import check_token
from adapters.discord.settings import DiscordSettings
from adapters.platform import PlatformServices, PlatformSpec

PROMPT_HINT = (
    "You are on Discord. Messages over 2,000 characters are split; Discord markdown "
    "works (bold, italic, code blocks, lists) but tables do not."
)

STARTER_CONFIG = """\
discord:                   # on when DISCORD_BOT_TOKEN is set
  require_mention: true    # in guild channels: answer when mentioned or replied to
  group_sessions_per_user: null  # null follows sessions.group_sessions_per_user
  allowed_users: []        # user ids or usernames (DISCORD_ALLOWED_USERS)
  allowed_roles: []        # role ids (DISCORD_ALLOWED_ROLES)
  allowed_channels: []     # channel or category ids; everyone there (DISCORD_ALLOWED_CHANNELS)
  allow_all_users: false   # DISCORD_ALLOW_ALL_USERS=true admits everyone
  dm_policy: pairing       # DMs from people not allow-listed: pairing | allowlist | open | disabled
  group_policy: allowlist  # groups: allowlist | open | disabled
  owners: []               # Discord user ids of the bot's owners (approve pairings and writes)
  rate_limit_per_minute: 20  # messages a chat may send a minute; the rest wait their turn
  allow_bots: false        # let other bots' messages reach the agent
  message_content: true    # the privileged intent; without it only mentions and DMs have text
  catch_up_max_age: 3600   # seconds of history read after a restart or new session
  watchdog_silence_seconds: 300   # probe after this long without an event (0: off)
  slash_commands: true     # register /new, /status, ... as slash commands
  streaming: auto          # show replies as they are written (one message, edited); off
  stream_updates_per_second: 10  # preview edits a second across chats (1 a second per chat)
  max_file_bytes: 20000000
  api_base: https://discord.com/api/v10  # [CHATGATE_DISCORD_API_BASE]
  gateway_url: wss://gateway.discord.gg/  # [CHATGATE_DISCORD_GATEWAY_URL]
  # bot_token: ...         # [DISCORD_BOT_TOKEN] keep it in the environment
"""


def build(d: DiscordSettings, services: PlatformServices) -> Adapter:
    """The Discord adapter for these settings (they have a token: ``enabled``)."""
    # Imported here, not at the top: discord.py is only loaded when it is used.
    from adapters.discord.adapter import DiscordAdapter, DiscordOptions
    from adapters.discord.messages import Access

    assert d.bot_token is not None
    options = DiscordOptions(
        token=d.bot_token.get_secret_value(),
        api_base=d.api_base,
        gateway_url=d.gateway_url,
        message_content=d.message_content,
        require_mention=d.require_mention,
        access=Access.of(d.allowed_users, d.allowed_roles, d.allowed_channels, d.allow_all_users),
        allow_bots=d.allow_bots,
        catch_up_max_age=d.catch_up_max_age,
        max_file_bytes=d.max_file_bytes,
        watchdog_silence_seconds=d.watchdog_silence_seconds,
        slash_commands=d.slash_commands,
        cache_dir=services.cache_dir,
        media=services.media,
        stream_updates_per_second=d.stream_updates_per_second if d.streaming == "auto" else None,
    )
    return DiscordAdapter(options, now=services.now)


SPEC = PlatformSpec(
    name="discord",
    settings=DiscordSettings,
    build=build,
    enabled=lambda d: d.enabled,
    env={
        "DISCORD_BOT_TOKEN": "bot_token",
        "CHATGATE_DISCORD_API_BASE": "api_base",
        "CHATGATE_DISCORD_GATEWAY_URL": "gateway_url",
        "DISCORD_ALLOWED_USERS": "allowed_users",
        "DISCORD_ALLOWED_ROLES": "allowed_roles",
        "DISCORD_ALLOWED_CHANNELS": "allowed_channels",
        "DISCORD_ALLOW_ALL_USERS": "allow_all_users",
    },
    prompt_hint=PROMPT_HINT,
    doctor=check_token,
    starter_config=STARTER_CONFIG,
    # discord.py's DEBUG lines carry every gateway event and request body (message text)
    # and interaction webhook URLs (a token each); its INFO lines are worth keeping.
    quiet_loggers={"discord": logging.INFO},
    body_loggers=("discord",),
    group_sessions_per_user=lambda d: d.group_sessions_per_user,
)
