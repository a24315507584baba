"""Who may talk to the agent: one policy for every platform, applied before the inbox.

Per platform (``AccessRules``, from the platform's settings section):

- Platforms whose requests are authenticated before they reach the core (the webhook,
  by its secret) or that only someone at the machine can use (the terminal) are not
  gated; everyone else's messages are.
- A gated message passes when its sender is an owner, is on the platform's allow-list
  (the adapter says so: ``InboundMessage.allow_listed``, as only it knows usernames,
  roles or channels), was let in through pairing, or the chat's policy is ``open``.
- Otherwise, by the policy of the chat's kind: a DM with ``pairing`` gets a code to
  give an owner (``core.pairing``); ``allowlist`` gets one polite refusal an hour;
  ``disabled`` (and a group message that did not address the bot, or one read back
  from history) gets nothing. Nothing a stranger sends is stored or reaches the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from core.clock import Clock
from core.messages import InboundMessage
from core.pairing import Pairings
from core.record import record
from core.refusals import RefusalLimiter

DmPolicy = Literal["pairing", "allowlist", "open", "disabled"]
GroupPolicy = Literal["allowlist", "open", "disabled"]

REFUSAL = (
    "Sorry, I can only talk with people this bot's owner has allowed. "
    "Ask them to add you ({platform}.allowed_users)."
)


@record
class AccessRules:
    """One platform's policy. The default lets everyone in and names no owner."""

    gated: bool = False
    dm_policy: DmPolicy = "open"
    group_policy: GroupPolicy = "open"
    # The platform's user ids of the bot's owners.
    owners: frozenset[str] = frozenset()
    # Everyone who can use the platform is an owner (the terminal, at the machine).
    everyone_owns: bool = False
    # Messages one chat may send a minute before the rest wait (0: no limit); applied
    # by ``core.rate_limit``.
    rate_limit_per_minute: int = 0


OPEN = AccessRules()


@record
class TurnedAway:
    """A message the policy kept out; ``reply`` is what to tell its sender, if anything
    (the adapter sends it, in the chat it came from)."""

    reason: Literal["pairing", "refused", "ignored"]
    reply: str | None = None


class AccessPolicy:
    """See the module docstring."""

    def __init__(self, rules: Mapping[str, AccessRules], pairings: Pairings, clock: Clock) -> None:
        self._rules = dict(rules)
        self._pairings = pairings
        self._refusals = RefusalLimiter(clock.now)

    def is_owner(self, platform: str, user_id: str) -> bool:
        rules = self._rules.get(platform, OPEN)
        return rules.everyone_owns or user_id in rules.owners

    async def admits(self, msg: InboundMessage) -> bool:
        """Whether ``msg`` may reach the core; no reply is sent, nothing is written."""
        rules = self._rules.get(msg.platform, OPEN)
        if not rules.gated or msg.allow_listed or self.is_owner(msg.platform, msg.user_id):
            return True
        if (rules.group_policy if msg.is_group else rules.dm_policy) == "open":
            return True
        return await self._pairings.is_paired(msg.platform, msg.user_id)

    async def check(self, msg: InboundMessage) -> TurnedAway | None:
        """None when ``msg`` is let in; else what became of it (see the module docstring)."""
        if await self.admits(msg):
            return None
        rules = self._rules.get(msg.platform, OPEN)
        policy = rules.group_policy if msg.is_group else rules.dm_policy
        if policy == "disabled" or msg.replayed or (msg.is_group and not msg.addressed):
            return TurnedAway("ignored")
        if policy == "pairing":
            return TurnedAway("pairing", await self._pairings.offer(msg))
        due = self._refusals.due(f"{msg.platform}:{msg.user_id}")
        return TurnedAway("refused", REFUSAL.format(platform=msg.platform) if due else None)
