"""How updates reach the bot, for ``tests.fakes.telegram_server``.

The test side: ``push_update`` numbers an update, remembers its chats and messages and
queues it; ``deliver_webhook`` POSTs one to the registered webhook instead. The Bot API
side: ``getUpdates`` (offset confirmation, negative offsets, ``limit``, long-poll
``timeout``, ``allowed_updates``, a newer poll ending an older one with 409, 409 while a
webhook is set), ``setWebhook``, ``deleteWebhook`` (both may drop pending updates) and
``getWebhookInfo``.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx

from tests.fakes.telegram_payloads import Json, update_kind
from tests.fakes.telegram_wire import CONFLICT_OTHER_POLL, CONFLICT_WEBHOOK, ApiError, int_param

# Update types Telegram delivers when allowed_updates is empty or never given.
_OPT_IN_UPDATES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})


@dataclass(slots=True)
class WebhookState:
    """What the last ``setWebhook`` registered (``url`` empty when none is set)."""

    url: str = ""
    secret_token: str | None = None
    allowed_updates: list[str] | None = None
    drop_pending_updates: bool = False
    max_connections: int | None = None
    set_count: int = 0
    delete_count: int = 0


@dataclass(slots=True)
class _Poll:
    """The getUpdates request currently being served (a newer one ends it with 409)."""

    number: int
    superseded: asyncio.Event = field(default_factory=asyncio.Event)


class UpdatesMixin:
    """FakeTelegram's update queue, long polls and webhook.

    The state below is set up by ``FakeTelegram.__init__``.
    """

    webhook: WebhookState
    pending: list[Json]
    confirmed_offset: int
    allowed_updates: list[str]
    chats: dict[int, Json]
    messages: dict[tuple[int, int], Json]
    _update_ids: itertools.count[int]
    _poll_numbers: itertools.count[int]
    _poll: _Poll | None
    _new_update: asyncio.Event
    _closing: asyncio.Event

    if TYPE_CHECKING:  # provided by FakeTelegram

        def _notify(self) -> None: ...

    # -- the test side ------------------------------------------------------------------

    def push_update(self, update: Json) -> Json:
        """Queue an update (numbered unless it has an ``update_id``) and wake long polls.

        Returns the update as queued. Chats, messages and senders in it become known to
        the fake (for replies and thread checks). Pushing the same ``update_id`` twice is
        allowed: it models a redelivery.
        """
        queued = copy.deepcopy(update)
        if "update_id" in queued:
            following = queued["update_id"] + 1
            self._update_ids = itertools.count(max(following, next(self._update_ids)))
        else:
            queued = {"update_id": next(self._update_ids), **queued}
        self._remember(queued)
        self.pending.append(queued)
        self._new_update.set()
        self._new_update = asyncio.Event()
        self._notify()
        return queued

    def push_updates(self, updates: Iterable[Json]) -> list[Json]:
        """``push_update`` each in turn."""
        return [self.push_update(update) for update in updates]

    def add_chat(self, chat: Json) -> Json:
        """Make a chat known without an update (a forum must be known to accept thread ids)."""
        self.chats[chat["id"]] = chat
        return chat

    def _remember(self, update: Json) -> None:
        for value in update.values():
            if isinstance(value, dict) and isinstance(value.get("chat"), dict):
                chat = value["chat"]
                self.chats.setdefault(chat["id"], chat)
                if "message_id" in value:
                    self.messages[(chat["id"], value["message_id"])] = value

    async def deliver_webhook(
        self,
        update: Json,
        *,
        secret_token: str | None = None,
        omit_secret: bool = False,
        url: str | None = None,
    ) -> httpx.Response:
        """POST an update to the registered webhook URL, as Telegram would.

        The update is numbered and remembered like ``push_update`` but not queued for
        getUpdates. The header carries the registered secret unless ``secret_token``
        overrides it or ``omit_secret`` leaves it out.
        """
        target = url or self.webhook.url
        if not target:
            raise RuntimeError("no webhook is set")
        queued = self.push_update(update)
        self.pending.pop()  # push_update appended it; webhook updates skip the queue
        headers = {"Content-Type": "application/json"}
        secret = secret_token if secret_token is not None else self.webhook.secret_token
        if secret is not None and not omit_secret:
            headers["X-Telegram-Bot-Api-Secret-Token"] = secret
        async with httpx.AsyncClient(timeout=10) as client:
            return await client.post(target, content=json.dumps(queued), headers=headers)

    # -- the Bot API side ---------------------------------------------------------------

    async def _get_updates(self, params: Json) -> list[Json]:
        if self.webhook.url:
            raise ApiError(409, CONFLICT_WEBHOOK)
        self._confirm(int_param(params, "offset"))
        if params.get("allowed_updates") is not None:
            self.allowed_updates = list(params["allowed_updates"])
        limit = min(max(int_param(params, "limit") or 100, 1), 100)
        timeout = max(int_param(params, "timeout") or 0, 0)
        poll = self._begin_poll()
        try:
            ready = self._deliverable(limit)
            if not ready and timeout:
                await self._wait_for_update(poll, timeout)
                ready = self._deliverable(limit)
        finally:
            if self._poll is poll:
                self._poll = None
        return ready

    def _confirm(self, offset: int | None) -> None:
        if offset is None or offset == 0:
            return
        if offset < 0:  # keep only the last -offset updates
            confirmed = self.pending[:offset] if -offset < len(self.pending) else []
            offset = confirmed[-1]["update_id"] + 1 if confirmed else self.confirmed_offset
        self.pending = [u for u in self.pending if u["update_id"] >= offset]
        self.confirmed_offset = max(self.confirmed_offset, offset)

    def _deliverable(self, limit: int) -> list[Json]:
        allowed = set(self.allowed_updates)
        wanted = [u for u in self.pending if _is_allowed(update_kind(u), allowed)]
        # Telegram never queues updates of a type the bot did not ask for.
        self.pending = wanted
        return copy.deepcopy(wanted[:limit])

    def _begin_poll(self) -> _Poll:
        if self._poll is not None:
            self._poll.superseded.set()
        self._poll = _Poll(next(self._poll_numbers))
        return self._poll

    async def _wait_for_update(self, poll: _Poll, seconds: float) -> None:
        waits = [
            asyncio.ensure_future(self._new_update.wait()),
            asyncio.ensure_future(poll.superseded.wait()),
            asyncio.ensure_future(self._closing.wait()),
        ]
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waits:
                waiter.cancel()
        if poll.superseded.is_set():
            raise ApiError(409, CONFLICT_OTHER_POLL)

    async def _set_webhook(self, params: Json) -> bool:
        url = str(params.get("url") or "")
        secret = params.get("secret_token")
        if secret is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", str(secret)):
            raise ApiError(400, "Bad Request: secret token contains unallowed characters")
        if url and not url.startswith(("https://", "http://")):
            raise ApiError(400, "Bad Request: bad webhook: An HTTPS URL must be provided")
        state = self.webhook
        state.url = url
        state.secret_token = None if secret is None else str(secret)
        state.allowed_updates = params.get("allowed_updates")
        state.drop_pending_updates = bool(params.get("drop_pending_updates"))
        state.max_connections = int_param(params, "max_connections")
        state.set_count += 1
        if state.allowed_updates is not None:
            self.allowed_updates = list(state.allowed_updates)
        if state.drop_pending_updates:
            self._drop_pending()
        return True

    async def _delete_webhook(self, params: Json) -> bool:
        self.webhook.url = ""
        self.webhook.secret_token = None
        self.webhook.delete_count += 1
        if params.get("drop_pending_updates"):
            self._drop_pending()
        return True

    def _drop_pending(self) -> None:
        if self.pending:
            self.confirmed_offset = self.pending[-1]["update_id"] + 1
        self.pending = []

    async def _get_webhook_info(self, params: Json) -> Json:
        info: Json = {
            "url": self.webhook.url,
            "has_custom_certificate": False,
            "pending_update_count": len(self.pending),
        }
        if self.webhook.url and self.webhook.allowed_updates is not None:
            info["allowed_updates"] = self.webhook.allowed_updates
        if self.webhook.url and self.webhook.max_connections is not None:
            info["max_connections"] = self.webhook.max_connections
        return info


def _is_allowed(kind: str, allowed: set[str]) -> bool:
    return kind in allowed if allowed else kind not in _OPT_IN_UPDATES
