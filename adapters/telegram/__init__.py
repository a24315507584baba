"""Telegram, on python-telegram-bot: polling or webhook mode (see ``adapter``).

On when ``TELEGRAM_BOT_TOKEN`` (``telegram.bot_token``) is set. python-telegram-bot is
imported only then, when the adapter is built.
"""

from __future__ import annotations

import logging

from adapters.base import Adapter
from adapters.platform import PlatformServices, PlatformSpec
from adapters.telegram.doctor import check_token
from adapters.telegram.settings import TelegramSettings, check_telegram

PROMPT_HINT = (
    "You are on Telegram. Messages over 4,096 characters are split; markdown is "
    "converted for Telegram (bold, italic, code, links; no tables or headings), so "
    "prefer short paragraphs and lists."
)

STARTER_CONFIG = """\
telegram:                  # on when TELEGRAM_BOT_TOKEN is set
  mode: polling            # or webhook (needs webhook_url and CHATGATE_TELEGRAM_WEBHOOK_SECRET)
  webhook_url: ""          # https://your.host/telegram/updates
  webhook_path: updates
  allowed_users: []        # ids or @usernames (TELEGRAM_ALLOWED_USERS)
  allowed_chats: []        # chat ids (TELEGRAM_ALLOWED_CHATS)
  allow_all_users: false   # TELEGRAM_ALLOW_ALL_USERS=true admits everyone
  dm_policy: pairing       # DMs from people not allow-listed: pairing | allowlist | open | disabled
  group_policy: allowlist  # groups: allowlist | open | disabled
  owners: []               # Telegram user ids of the bot's owners (approve pairings and writes)
  rate_limit_per_minute: 20  # messages a chat may send a minute; the rest wait their turn
  require_mention: true    # in groups: answer when mentioned, replied to or /cmd@bot
  handle_edits: false
  max_backlog_age: 3600    # seconds; older queued updates are skipped with one notice
  max_file_bytes: 20000000
  poll_timeout_seconds: 30 # long-poll wait of each getUpdates call (0-50)
  streaming: auto          # show replies as they grow (DMs: drafts; groups: edits) | off
  stream_updates_per_second: 20  # preview updates across chats (1/s per chat; Telegram ~30/s)
  base_url: https://api.telegram.org/bot  # [CHATGATE_TELEGRAM_BASE_URL] a local Bot API server
  base_file_url: https://api.telegram.org/file/bot  # [CHATGATE_TELEGRAM_BASE_FILE_URL]
  # bot_token: ...         # [TELEGRAM_BOT_TOKEN] keep it in the environment
  # webhook_secret: ...    # [CHATGATE_TELEGRAM_WEBHOOK_SECRET] for mode: webhook
"""


def build(t: TelegramSettings, services: PlatformServices) -> Adapter:
    """The Telegram adapter for these settings (they have a token: ``enabled``)."""
    # Imported here, not at the top: python-telegram-bot is only loaded when it is used.
    from adapters.telegram.adapter import TelegramAdapter, TelegramOptions
    from adapters.telegram.updates import Access

    assert t.bot_token is not None
    options = TelegramOptions(
        token=t.bot_token.get_secret_value(),
        base_url=t.base_url,
        base_file_url=t.file_url,
        mode=t.mode,
        webhook_url=t.webhook_url,
        webhook_secret=t.webhook_secret.get_secret_value() if t.webhook_secret else None,
        webhook_path=t.webhook_path,
        max_backlog_age=t.max_backlog_age,
        require_mention=t.require_mention,
        handle_edits=t.handle_edits,
        access=Access.of(t.allowed_users, t.allowed_chats, t.allow_all_users),
        max_file_bytes=t.max_file_bytes,
        cache_dir=services.cache_dir,
        poll_timeout_seconds=t.poll_timeout_seconds,
        media=services.media,
        stream_updates_per_second=t.stream_updates_per_second if t.streaming == "auto" else None,
    )
    return TelegramAdapter(options, now=services.now)


SPEC = PlatformSpec(
    name="telegram",
    settings=TelegramSettings,
    build=build,
    enabled=lambda t: t.enabled,
    env={
        "TELEGRAM_BOT_TOKEN": "bot_token",
        "CHATGATE_TELEGRAM_BASE_URL": "base_url",
        "CHATGATE_TELEGRAM_BASE_FILE_URL": "base_file_url",
        "CHATGATE_TELEGRAM_MODE": "mode",
        "CHATGATE_TELEGRAM_WEBHOOK_URL": "webhook_url",
        "CHATGATE_TELEGRAM_WEBHOOK_SECRET": "webhook_secret",
        "TELEGRAM_ALLOWED_USERS": "allowed_users",
        "TELEGRAM_ALLOWED_CHATS": "allowed_chats",
        "TELEGRAM_ALLOW_ALL_USERS": "allow_all_users",
    },
    prompt_hint=PROMPT_HINT,
    doctor=check_token,
    mounts_routes=True,
    starter_config=STARTER_CONFIG,
    check=check_telegram,
    # Request URLs carry the bot token: httpx logs each one at INFO.
    quiet_loggers={"httpx": logging.WARNING, "httpcore": logging.WARNING},
    # telegram.Bot logs every API call's parameters and result at DEBUG (the text sent and
    # received); telegram.ext logs each update.
    body_loggers=("telegram",),
)
