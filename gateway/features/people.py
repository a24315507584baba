"""``/forget-me``: a person deletes what the gateway keeps about them, from a direct chat.

The first ``/forget-me`` says what will go and asks for ``/forget-me confirm``; the
confirmation forgets them exactly as ``chatgate people forget`` does (``core.people``)
and tells the platform's owners, in their direct chats, that someone was forgotten
(without naming them: the notice is stored like every reply). In a group it only says to
ask in a direct chat, so nobody forgets themselves by accident in front of others.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from core.audit.salt import audit_salt
from core.clock import Clock
from core.commands import Command, CommandHost, CommandReply
from core.errors import ChatgateError
from core.messages import ChatTarget
from core.people.files import file_areas
from core.people.marks import ForgetMarks, forget_marks_path
from core.people.person import Person
from core.people.service import People
from core.store.db import SessionDB
from core.store.records import InboxItem
from gateway import platforms
from gateway.features.base import Contribution, FeatureContext, FeatureSpec
from gateway.settings import Settings

log = logging.getLogger(__name__)

ASK = (
    "This deletes everything I keep about you: your messages and my replies to them, "
    "the sessions only you took part in, your profile notes, your pairing. It cannot be "
    "undone. To go ahead, send: /forget-me confirm"
)
IN_GROUP = "Send /forget-me to me in a direct chat."
DONE = "Done: I deleted {messages} messages and {sessions} sessions of yours. Goodbye!"
FAILED = "Sorry, forgetting you did not complete; the bot's owner has been told."
OWNER_NOTICE = "Someone on {platform} used /forget-me: their data was deleted ({outcome})."


def build_people(settings: Settings, db: SessionDB, clock: Clock) -> People:
    """The ``People`` the CLI and the gateway share, over this home."""
    marks = ForgetMarks(forget_marks_path(settings.home))
    home = settings.home
    return People(db, file_areas(home), marks, clock, salt=lambda: audit_salt(home))


class PeopleFeature:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        people = build_people(self._settings, ctx.db, ctx.clock)
        owners = {name: r.owners for name, r in platforms.access_rules(self._settings).items()}

        async def forget_me(_host: CommandHost, item: InboxItem, args: str) -> CommandReply:
            msg = item.message
            if msg.is_group:
                return CommandReply(IN_GROUP)
            if args.strip().lower() != "confirm":
                return CommandReply(ASK)
            person = Person(msg.platform, msg.user_id)
            ctx.core.audit.forgetting(str(person))
            try:
                done = await people.forget(person, keep_inbox_id=item.id)
            except ChatgateError as exc:
                log.warning("/forget-me did not complete: %s", exc.__class__.__name__)
                await _tell(ctx, msg.platform, msg.route, owners, "it did not complete")
                return CommandReply(FAILED)
            outcome = f"{done.counts.get('messages', 0)} messages"
            await _tell(ctx, msg.platform, msg.route, owners, outcome)
            reply = DONE.format(
                messages=done.counts.get("messages", 0), sessions=done.counts.get("sessions", 0)
            )
            return CommandReply(reply, end_session_reason="forget")

        yield Contribution(
            commands=[Command("forget-me", "delete what I keep about you", forget_me)]
        )


async def _tell(
    ctx: FeatureContext,
    platform: str,
    route: str | None,
    owners: dict[str, frozenset[str]],
    outcome: str,
) -> None:
    text = OWNER_NOTICE.format(platform=platform, outcome=outcome)
    for owner in sorted(owners.get(platform, frozenset())):
        await ctx.core.notify(ChatTarget(platform, owner, route=route), [text])


def build(settings: Settings) -> PeopleFeature:
    return PeopleFeature(settings)


SPEC = FeatureSpec("people", build)
