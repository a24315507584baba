"""``chatgate doctor``'s Discord check: the token, asked to REST ``/users/@me``."""

from __future__ import annotations

from adapters.discord.settings import DiscordSettings
from adapters.probe import Probe, http_get, refused

FIX = (
    "set DISCORD_BOT_TOKEN (discord.bot_token) to the bot's token "
    "(Developer Portal, Bot, Reset Token)"
)


async def check_token(d: DiscordSettings, within: float) -> Probe:
    """Whether Discord's REST API at ``discord.api_base`` accepts this bot token."""
    token = d.bot_token.get_secret_value() if d.bot_token else ""
    headers = {"Authorization": f"Bot {token}"}
    answer = await http_get(f"{d.api_base}/users/@me", headers, within)
    if isinstance(answer, str):
        return Probe(False, answer, "check the network, or discord.api_base")
    failed = refused(answer, "the bot token", FIX)
    if failed is not None:
        return failed
    return Probe(True, f"bot {answer.json().get('username', '?')}")
