"""Discord API objects as JSON, for ``tests.fakes.discord_server``.

Only what the fake needs: snowflakes, the fixed world (bot, a human, a guild with a
``general`` channel) and builders for users, channels, threads, roles, members, messages,
attachments, application commands, the application and gateway discovery. The field sets
follow what discord.py 2.7's parsers read (``Guild._from_data``, ``TextChannel._update``,
``Thread._from_data``, ``Member.__init__``, ``Message.__init__``, ``Attachment.__init__``,
``AppCommand``). Also Discord's error answers (``ApiError`` and its codes) and the paging
of channel history.
"""

from __future__ import annotations

import base64
import email.parser
import email.policy
import itertools
import json
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

Json = dict[str, Any]

DISCORD_EPOCH_MS = 1_420_070_400_000
MAX_CONTENT = 2000
ATTACHMENT_SIZE_LIMIT = 25 * 1024 * 1024

# Channel types (https://discord.com/developers/docs/resources/channel#channel-object-channel-types).
GUILD_TEXT = 0
DM = 1
GUILD_FORUM = 15
PUBLIC_THREAD = 11
CHANNEL_KINDS = {"text": GUILD_TEXT, "forum": GUILD_FORUM}

# Message types.
DEFAULT_MESSAGE = 0
REPLY = 19
CHAT_INPUT_COMMAND = 20

# Option types a slash command can declare (the fake converts string values to these).
_OPTION_CONVERTERS: dict[int, Any] = {
    4: int,
    5: lambda value: str(value).lower() in ("1", "true", "yes"),
    10: float,
}

# What @everyone may do in the fake guild: view, send, read history, attach, embed,
# react, use application commands, send in threads.
EVERYONE_PERMISSIONS = str(
    (1 << 10) | (1 << 11) | (1 << 16) | (1 << 15) | (1 << 14) | (1 << 6) | (1 << 31) | (1 << 38)
)

_counter = itertools.count(1)
_last_snowflake = 0


def snowflake_at(unix_ms: int, increment: int = 0) -> int:
    """The snowflake Discord would mint at ``unix_ms`` with this increment."""
    return ((unix_ms - DISCORD_EPOCH_MS) << 22) | (increment & 0xFFF)


def new_snowflake() -> str:
    """A fresh, strictly increasing snowflake from the real clock (as Discord mints them)."""
    global _last_snowflake
    candidate = snowflake_at(int(time.time() * 1000), next(_counter))
    _last_snowflake = max(candidate, _last_snowflake + 1)
    return str(_last_snowflake)


def snowflake_time(snowflake: str) -> datetime:
    """When ``snowflake`` was minted."""
    return datetime.fromtimestamp(((int(snowflake) >> 22) + DISCORD_EPOCH_MS) / 1000, UTC)


def iso(moment: datetime) -> str:
    """Discord's timestamp format (ISO 8601 with offset)."""
    return moment.isoformat()


def _fixed(day: str, increment: int) -> str:
    """A stable snowflake for the fixed world, minted on ``day`` (YYYY-MM-DD)."""
    moment = datetime.fromisoformat(day).replace(tzinfo=UTC)
    return str(snowflake_at(int(moment.timestamp() * 1000), increment))


# -- the fixed world ----------------------------------------------------------------------

BOT_ID = _fixed("2023-05-01", 1)
APPLICATION_ID = BOT_ID  # modern applications share the bot user's id
GUILD_ID = _fixed("2023-05-02", 1)
GENERAL_ID = _fixed("2023-05-02", 2)
OWNER_ID = _fixed("2023-05-03", 1)
DEFAULT_TOKEN = "MTEwMjk0NjQwMDAwMDAwMDAwMQ.GfAkEd.chatgate-fake-discord-token-0123456789"
GUILD_JOINED_AT = iso(datetime(2023, 5, 2, 12, 0, tzinfo=UTC))


def make_user(username: str, *, bot: bool = False, id: str | None = None) -> Json:  # noqa: A002
    """A Discord ``User`` object (new-style username, discriminator ``"0"``)."""
    return {
        "id": id or new_snowflake(),
        "username": username,
        "discriminator": "0",
        "global_name": None if bot else username.capitalize(),
        "avatar": None,
        "bot": bot,
        "system": False,
        "public_flags": 0,
        "flags": 0,
        "banner": None,
        "accent_color": None,
        "avatar_decoration_data": None,
    }


BOT_USER: Json = {
    **make_user("chatgate", bot=True, id=BOT_ID),
    "verified": True,
    "mfa_enabled": False,
}
DEFAULT_USER: Json = make_user("ada", id=_fixed("2023-05-03", 2))


# -- builders -----------------------------------------------------------------------------


def guild_channel(channel_id: str, name: str, channel_type: int, position: int) -> Json:
    """A guild text or forum channel."""
    channel: Json = {
        "id": channel_id,
        "type": channel_type,
        "guild_id": GUILD_ID,
        "name": name,
        "position": position,
        "permission_overwrites": [],
        "parent_id": None,
        "topic": None,
        "nsfw": False,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "default_auto_archive_duration": 1440,
        "flags": 0,
    }
    if channel_type == GUILD_FORUM:
        channel.update(available_tags=[], default_reaction_emoji=None, default_forum_layout=0)
    return channel


def thread_channel(thread_id: str, parent_id: str, name: str, owner_id: str) -> Json:
    """A public thread (type 11) under ``parent_id``."""
    created = iso(snowflake_time(thread_id))
    return {
        "id": thread_id,
        "type": PUBLIC_THREAD,
        "guild_id": GUILD_ID,
        "parent_id": parent_id,
        "owner_id": owner_id,
        "name": name,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "message_count": 0,
        "member_count": 1,
        "total_message_sent": 0,
        "flags": 0,
        "applied_tags": [],
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": created,
            "locked": False,
            "create_timestamp": created,
        },
    }


def dm_channel(channel_id: str, recipient: Json) -> Json:
    """The DM channel (type 1) between the bot and ``recipient``."""
    return {
        "id": channel_id,
        "type": DM,
        "last_message_id": None,
        "recipients": [recipient],
        "flags": 0,
    }


def role(role_id: str, name: str, position: int, permissions: str = "0") -> Json:
    """A guild role."""
    return {
        "id": role_id,
        "name": name,
        "permissions": permissions,
        "position": position,
        "color": 0,
        "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
        "hoist": False,
        "icon": None,
        "unicode_emoji": None,
        "managed": False,
        "mentionable": False,
        "flags": 0,
    }


def member(role_ids: Iterable[str], *, user: Json | None = None) -> Json:
    """A guild member; ``user`` is included when given (``GUILD_CREATE``, interactions)."""
    data: Json = {
        "roles": list(role_ids),
        "joined_at": GUILD_JOINED_AT,
        "premium_since": None,
        "nick": None,
        "avatar": None,
        "banner": None,
        "deaf": False,
        "mute": False,
        "pending": False,
        "flags": 0,
        "communication_disabled_until": None,
    }
    if user is not None:
        data["user"] = user
    return data


def guild(
    channels: list[Json], threads: list[Json], roles: list[Json], members: list[Json]
) -> Json:
    """The ``GUILD_CREATE`` payload for the fake guild."""
    return {
        "id": GUILD_ID,
        "name": "Chatgate Test Guild",
        "icon": None,
        "splash": None,
        "discovery_splash": None,
        "banner": None,
        "description": None,
        "owner_id": OWNER_ID,
        "afk_channel_id": None,
        "afk_timeout": 300,
        "verification_level": 0,
        "default_message_notifications": 1,
        "explicit_content_filter": 0,
        "mfa_level": 0,
        "nsfw_level": 0,
        "premium_tier": 0,
        "premium_subscription_count": 0,
        "premium_progress_bar_enabled": False,
        "preferred_locale": "en-US",
        "system_channel_id": GENERAL_ID,
        "system_channel_flags": 0,
        "rules_channel_id": None,
        "public_updates_channel_id": None,
        "safety_alerts_channel_id": None,
        "vanity_url_code": None,
        "application_id": None,
        "features": [],
        "emojis": [],
        "stickers": [],
        "roles": roles,
        "channels": channels,
        "threads": threads,
        "members": members,
        "member_count": len(members) + 1,
        "large": False,
        "unavailable": False,
        "joined_at": GUILD_JOINED_AT,
        "voice_states": [],
        "presences": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "soundboard_sounds": [],
        "lazy": True,
    }


def message(
    message_id: str,
    channel_id: str,
    author: Json,
    content: str,
    *,
    guild_id: str | None = None,
    author_member: Json | None = None,
    mentions: list[Json] | None = None,
    attachments: list[Json] | None = None,
    embeds: list[Json] | None = None,
    message_type: int = DEFAULT_MESSAGE,
    reference: Json | None = None,
    referenced: Json | None = None,
    flags: int = 0,
    webhook_id: str | None = None,
) -> Json:
    """A ``Message`` object as the gateway delivers it (``guild_id``/``member`` in guilds)."""
    data: Json = {
        "id": message_id,
        "channel_id": channel_id,
        "author": author,
        "content": content,
        "timestamp": iso(snowflake_time(message_id)),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": mentions or [],
        "mention_roles": [],
        "attachments": attachments or [],
        "embeds": embeds or [],
        "components": [],
        "pinned": False,
        "type": message_type,
        "flags": flags,
    }
    if guild_id is not None:
        data["guild_id"] = guild_id
        if author_member is not None:
            data["member"] = author_member
    if reference is not None:
        data["message_reference"] = reference
        data["referenced_message"] = referenced
    if webhook_id is not None:
        data["webhook_id"] = webhook_id
        data["application_id"] = webhook_id
    return data


def attachment(attachment_id: str, filename: str, data: bytes, content_type: str, url: str) -> Json:
    """An ``Attachment`` object whose ``url`` and ``proxy_url`` serve ``data``.

    ``voice-message.ogg`` is a voice message, as Discord's app records one: it carries a
    duration and a waveform.
    """
    found: Json = {
        "id": attachment_id,
        "filename": filename,
        "size": len(data),
        "url": url,
        "proxy_url": url,
        "content_type": content_type,
        "flags": 0,
    }
    if filename == VOICE_MESSAGE:
        found.update(duration_secs=2.5, waveform=base64.b64encode(bytes(16)).decode())
    return found


VOICE_MESSAGE = "voice-message.ogg"


def application_command(
    spec: Json, command_id: str, *, guild_id: str | None = None, version: str | None = None
) -> Json:
    """A registered ``ApplicationCommand``: what the bot sent, completed with server fields."""
    command: Json = {
        "type": 1,
        "description": "",
        "options": [],
        "default_member_permissions": None,
        "dm_permission": True,
        "nsfw": False,
        "contexts": None,
        "integration_types": [0],
        "name_localizations": None,
        "description_localizations": None,
        **spec,
        "id": command_id,
        "application_id": APPLICATION_ID,
        "version": version or new_snowflake(),
    }
    if guild_id is not None:
        command["guild_id"] = guild_id
    return command


def command_options(command: Json, values: dict[str, str]) -> list[Json]:
    """Interaction ``data.options`` for ``values``, typed as ``command`` declares them."""
    declared = {option["name"]: option for option in command.get("options") or []}
    options: list[Json] = []
    for name, value in values.items():
        option_type = int(declared.get(name, {}).get("type", 3))
        convert = _OPTION_CONVERTERS.get(option_type, str)
        options.append({"name": name, "type": option_type, "value": convert(value)})
    return options


def application(owner: Json) -> Json:
    """``GET /oauth2/applications/@me``: the bot's application, owned by ``owner``."""
    return {
        "id": APPLICATION_ID,
        "name": BOT_USER["username"],
        "description": "",
        "icon": None,
        "bot_public": True,
        "bot_require_code_grant": False,
        "owner": owner,
        "team": None,
        "verify_key": "0" * 64,
        "flags": 0,
        "bot": BOT_USER,
        "summary": "",
        "interactions_endpoint_url": None,
    }


def gateway_bot(url: str) -> Json:
    """``GET /gateway/bot`` (and ``/gateway``): where to connect, one shard."""
    return {
        "url": url,
        "shards": 1,
        "session_start_limit": {
            "total": 1000,
            "remaining": 999,
            "reset_after": 14_400_000,
            "max_concurrency": 1,
        },
    }


def error_body(code: int, message: str, errors: Json | None = None) -> Json:
    """Discord's JSON error body."""
    body: Json = {"message": message, "code": code}
    if errors is not None:
        body["errors"] = errors
    return body


def field_error(field: str, code: str, message: str) -> Json:
    """The ``errors`` tree of a 50035 Invalid Form Body for one field."""
    return {field: {"_errors": [{"code": code, "message": message}]}}


# Error codes (https://discord.com/developers/docs/topics/opcodes-and-status-codes).
UNKNOWN_CHANNEL = (10003, "Unknown Channel")
UNKNOWN_MESSAGE = (10008, "Unknown Message")
UNKNOWN_WEBHOOK = (10015, "Unknown Webhook")
UNKNOWN_INTERACTION = (10062, "Unknown interaction")
ALREADY_ACKNOWLEDGED = (40060, "Interaction has already been acknowledged.")
EMPTY_MESSAGE = (50006, "Cannot send an empty message")
NON_TEXT_CHANNEL = (50008, "Cannot send messages in a non-text channel")
INVALID_RECIPIENTS = (50033, "Invalid Recipient(s)")
INVALID_FORM_BODY = (50035, "Invalid Form Body")


class ApiError(Exception):
    """A Discord error answer, raised inside a handler and turned into the JSON body."""

    def __init__(self, status: int, code: int, message: str, *, errors: Json | None = None) -> None:
        super().__init__(f"{status} {code} {message}")
        self.status = status
        self.body = error_body(code, message, errors)


def invalid(field_name: str, code: str, text: str) -> ApiError:
    """A 400 Invalid Form Body naming one field."""
    return ApiError(400, *INVALID_FORM_BODY, errors=field_error(field_name, code, text))


def history_page(messages: list[Json], query: Mapping[str, str]) -> list[Json]:
    """``GET /channels/{id}/messages``: up to ``limit`` messages, newest first."""
    try:
        limit = int(query.get("limit", "50"))
    except ValueError:
        raise invalid("limit", "NUMBER_TYPE_COERCE", "Value is not int.") from None
    if not 1 <= limit <= 100:
        raise invalid("limit", "NUMBER_TYPE_MAX", "int value should be between 1 and 100.")
    ordered = sorted(messages, key=lambda m: int(m["id"]))
    if "around" in query:
        pivot = int(query["around"])
        older = [m for m in ordered if int(m["id"]) < pivot][-(limit // 2) :] if limit > 1 else []
        newer = [m for m in ordered if int(m["id"]) >= pivot][: limit - len(older)]
        page = older + newer
    elif "after" in query:
        page = [m for m in ordered if int(m["id"]) > int(query["after"])][:limit]
    else:
        if "before" in query:
            ordered = [m for m in ordered if int(m["id"]) < int(query["before"])]
        page = ordered[-limit:]
    return list(reversed(page))


def parse_multipart(content_type: str, body: bytes) -> tuple[Json | None, list[tuple[str, bytes]]]:
    """``payload_json`` and the uploaded ``files[n]`` (filename, bytes) of a form body."""
    header = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    parsed = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(header + body)
    payload: Json | None = None
    files: list[tuple[str, bytes]] = []
    for part in parsed.iter_parts():
        name = part.get_param("name", header="content-disposition")
        raw = part.get_payload(decode=True)
        data = raw if isinstance(raw, bytes) else b""
        if name == "payload_json":
            payload = json.loads(data)
        elif isinstance(name, str) and name.startswith("files["):
            files.append((part.get_filename() or name, data))
    return payload, files
