"""``/pair``: an owner's view of pairing from a chat (``chatgate pairing`` from the shell).

``/pair list``, ``/pair approve [PLATFORM] CODE`` and ``/pair revoke [PLATFORM] USER_ID``;
the platform defaults to the chat's. Only owners may use it.
"""

from __future__ import annotations

from core.commands import Command, CommandHost, CommandReply
from core.pairing import Pairings
from core.store.records import InboxItem

USAGE = "Usage: /pair list | /pair approve [PLATFORM] CODE | /pair revoke [PLATFORM] USER_ID"
OWNERS_ONLY = "Only the bot's owners can manage pairing (<platform>.owners)."


def pair_command(pairings: Pairings) -> Command:
    async def pair(host: CommandHost, item: InboxItem, args: str) -> CommandReply:
        msg = item.message
        if not host.is_owner(msg):
            return CommandReply(OWNERS_ONLY)
        words = args.split()
        if not words:
            return CommandReply(USAGE)
        verb, rest = words[0].lower(), words[1:]
        if verb == "list" and len(rest) <= 1:
            return CommandReply(await pairings.listing(rest[0] if rest else msg.platform))
        if verb in ("approve", "revoke") and 1 <= len(rest) <= 2:
            platform, target = (rest[0].lower(), rest[1]) if rest[1:] else (msg.platform, rest[0])
            if verb == "revoke":
                _, said = await pairings.revoke(platform, target)
            else:
                approver = f"{msg.platform}:{msg.user_id}"
                _, said = await pairings.approve(platform, target, approver=approver)
            return CommandReply(said)
        return CommandReply(USAGE)

    summary = "owners: let a person in by their pairing code (list|approve|revoke)"
    return Command("pair", summary, pair)
