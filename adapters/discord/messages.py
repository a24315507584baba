"""Which Discord messages reach the agent, and as what.

A pure decision over discord.py's ``Message``: the adapter downloads attachments and
talks to the inbox; this module only says whether a message is for the agent (and
whether the allow-list admits it), or ignored (and why). Whether someone not on the
allow-list may talk anyway (an owner, paired, an open policy) is the core's call
(``core.access``).

- A DM is a direct session keyed by its DM channel. A guild text channel is a group
  chat (each member gets their own session unless ``group_sessions_per_user`` is off).
  A thread or forum post is a thread session of its parent channel, shared by the
  people in it.
- In guilds the bot answers when mentioned (the user or its managed role) or replied
  to; ``require_mention: false`` answers every message. Threads the bot started count
  as addressed. DMs are always addressed.
- Its own messages are never taken; other bots' (and webhooks') only with
  ``allow_bots``. System messages (joins, pins, thread renames) are ignored.
- Access: any one of everyone, the author's id or (for people) username, one of their
  role ids, or the channel's id (its parent's or category's) admits a message.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import field

import discord

from core.record import record

CHAT_MESSAGE_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})
_USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")
_CHANNEL_MENTION = re.compile(r"<#(\d+)>")


@record
class Access:
    """Who may talk to the bot; ids or names (compared case-insensitively)."""

    users: frozenset[str] = frozenset()
    roles: frozenset[str] = frozenset()
    channels: frozenset[str] = frozenset()
    everyone: bool = False

    @classmethod
    def of(
        cls,
        users: Collection[str],
        roles: Collection[str],
        channels: Collection[str],
        everyone: bool,
    ) -> Access:
        def clean(values: Collection[str]) -> frozenset[str]:
            return frozenset(v.strip().lstrip("@#").lower() for v in values if v.strip())

        return cls(clean(users), clean(roles), clean(channels), everyone)

    def allows(self, author: discord.abc.User, channel_ids: Iterable[str]) -> bool:
        if self.everyone or any(c in self.channels for c in channel_ids):
            return True
        if str(author.id) in self.users:
            return True
        # Usernames are unique among people only: a bot's or webhook's name is not.
        if not author.bot and author.name.lower() in self.users:
            return True
        roles = getattr(author, "roles", ())  # a Member in guilds, a User in DMs
        return any(str(r.id) in self.roles for r in roles)

    @property
    def by_channel_only(self) -> bool:
        """Only channels admit anyone: missed messages can only be in those."""
        return bool(self.channels) and not (self.everyone or self.users or self.roles)


@record
class Place:
    """Where a message was written, as chatgate keys it."""

    chat_id: str
    thread_id: str | None
    is_group: bool
    # The channel, its parent and category: any of them can be on the allow-list.
    channel_ids: tuple[str, ...]
    owner_id: int | None = None

    @property
    def reply_channel(self) -> str:
        return self.thread_id or self.chat_id


def place_of(channel: discord.abc.MessageableChannel | discord.abc.Snowflake) -> Place:
    if isinstance(channel, discord.Thread):
        parent = channel.parent
        ids = [str(channel.id), str(channel.parent_id)]
        if parent is not None and parent.category_id is not None:
            ids.append(str(parent.category_id))
        return Place(str(channel.parent_id), str(channel.id), True, tuple(ids), channel.owner_id)
    # A channel of a guild not in discord.py's cache is a PartialMessageable: it still
    # knows its guild_id, and must not pass for a DM.
    if getattr(channel, "guild", None) is None and getattr(channel, "guild_id", None) is None:
        return Place(str(channel.id), None, False, (str(channel.id),))
    ids = [str(channel.id)]
    category = getattr(channel, "category_id", None)
    if category is not None:
        ids.append(str(category))
    return Place(str(channel.id), None, True, tuple(ids))


def place_of_interaction(interaction: discord.Interaction) -> Place:
    """Where a slash command was invoked, or a button clicked."""
    channel = interaction.channel
    if channel is not None:
        return place_of(channel)
    cid = str(interaction.channel_id)
    return Place(cid, None, interaction.guild_id is not None, (cid,))


@record
class Incoming:
    """A message for the agent."""

    message: discord.Message
    place: Place
    user_id: str
    user_name: str
    text: str
    reply_to: str | None
    sent_at: float
    # The allow-list admits it (user, role or channel), and it addressed the bot.
    allowed: bool
    addressed: bool
    attachments: list[discord.Attachment] = field(default_factory=list)


@record
class Ignored:
    reason: str


Decision = Incoming | Ignored


def decide(
    message: discord.Message,
    bot_id: int,
    access: Access,
    *,
    require_mention: bool,
    allow_bots: bool,
) -> Decision:
    author = message.author
    if author.id == bot_id:
        return Ignored("own message")
    if (author.bot or message.webhook_id is not None) and not allow_bots:
        return Ignored("from a bot")
    if message.type not in CHAT_MESSAGE_TYPES:
        return Ignored(f"system message ({message.type.name})")
    place = place_of(message.channel)
    addressed = (
        not place.is_group
        or addresses_bot(message, bot_id)
        or (place.thread_id is not None and place.owner_id == bot_id)
    )
    if place.is_group and require_mention and not addressed:
        return Ignored("not addressed to the bot")
    text = clean_text(message, bot_id)
    if not text and not message.attachments:
        return Ignored("no text")
    reference = message.reference
    return Incoming(
        message=message,
        place=place,
        user_id=str(author.id),
        user_name=author.display_name,
        text=text,
        reply_to=str(reference.message_id) if reference and reference.message_id else None,
        sent_at=message.created_at.timestamp(),
        allowed=access.allows(author, place.channel_ids),
        addressed=addressed,
        attachments=list(message.attachments),
    )


def addresses_bot(message: discord.Message, bot_id: int) -> bool:
    """Mentioned (as a user or through its managed role) or replied to."""
    if any(u.id == bot_id for u in message.mentions):
        return True
    if any(_is_bot_role(r, bot_id) for r in message.role_mentions):
        return True
    resolved = message.reference.resolved if message.reference else None
    return isinstance(resolved, discord.Message) and resolved.author.id == bot_id


def _is_bot_role(role: discord.Role, bot_id: int) -> bool:
    return role.tags is not None and role.tags.bot_id == bot_id


def clean_text(message: discord.Message, bot_id: int) -> str:
    """The content without the bot's mention; other mentions as readable names."""
    users = {u.id: u.display_name for u in message.mentions}
    roles = {r.id: r for r in message.role_mentions}
    channels = {c.id: getattr(c, "name", None) for c in message.channel_mentions}

    def user(match: re.Match[str]) -> str:
        uid = int(match[1])
        return "" if uid == bot_id else f"@{users.get(uid, match[1])}"

    def role(match: re.Match[str]) -> str:
        found = roles.get(int(match[1]))
        if found is None:
            return match[0]
        return "" if _is_bot_role(found, bot_id) else f"@{found.name}"

    def channel(match: re.Match[str]) -> str:
        name = channels.get(int(match[1]))
        return f"#{name}" if name else match[0]

    text = _USER_MENTION.sub(user, message.content)
    text = _ROLE_MENTION.sub(role, text)
    text = _CHANNEL_MENTION.sub(channel, text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()
