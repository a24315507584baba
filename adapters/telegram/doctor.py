"""``chatgate doctor``'s Telegram check: the token, asked to the Bot API's ``getMe``."""

from __future__ import annotations

from adapters.probe import Probe, http_get, refused
from adapters.telegram.settings import TelegramSettings

FIX = "set TELEGRAM_BOT_TOKEN (telegram.bot_token) to the token @BotFather gave the bot"


async def check_token(t: TelegramSettings, within: float) -> Probe:
    """Whether the Bot API at ``telegram.base_url`` knows the bot by this token."""
    token = t.bot_token.get_secret_value() if t.bot_token else ""
    answer = await http_get(f"{t.base_url}{token}/getMe", {}, within)
    if isinstance(answer, str):
        return Probe(False, answer, "check the network, or telegram.base_url")
    failed = refused(answer, "the bot token", FIX)
    if failed is not None:
        return failed
    result = answer.json().get("result") or {}
    return Probe(True, f"bot @{result.get('username', '?')}")
