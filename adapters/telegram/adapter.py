"""Telegram adapter on python-telegram-bot 22: polling or webhook, nothing lost, nothing twice.

- **Ingest.** Each update is committed to the inbox (unique on bot id + ``update_id``)
  before the polling offset moves past it or the webhook answers 200. The poll loop is
  ours, over ``Bot.get_updates``: PTB's ``Updater`` confirms an update when it fetches
  the next batch, whether or not it was stored. At start nothing pending is dropped;
  updates older than ``telegram.max_backlog_age`` are skipped with one notice per chat.
  A second poller on the token (409 Conflict) is reported and retried with backoff.
- **Webhook mode.** ``setWebhook`` with a secret token; ``POST /telegram/{path}`` on the
  gateway's own app checks ``X-Telegram-Bot-Api-Secret-Token`` in constant time.
- **Replies.** Markdown becomes text plus entities, split at 4,096 UTF-16 units, sent to
  the message's topic (``adapters.telegram.send``: formatting refused is resent plain,
  ``RetryAfter`` waited out, a blocked bot's reply ``Undeliverable``, no part sent twice).
- **Typing** while a turn runs (every 4 s); **previews** of replies as they are generated
  (``adapters.telegram.preview``); **buttons** and taps (``adapters.telegram.buttons``).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import field
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from telegram import Bot, BotCommand, Update
from telegram.constants import ChatAction
from telegram.error import Conflict, InvalidToken, NetworkError, RetryAfter, TelegramError
from telegram.request import HTTPXRequest

from adapters.attachments import not_downloaded, save_attachment, too_big
from adapters.telegram.api_errors import retry_seconds
from adapters.telegram.buttons import Keyboards, Taps
from adapters.telegram.preview import previews_for
from adapters.telegram.send import ReplySender
from adapters.telegram.updates import (
    Access,
    BotIdentity,
    FileRef,
    Ignored,
    Incoming,
    TooOld,
    decide,
)
from adapters.typing_indicator import TypingIndicator
from core.access import TurnedAway
from core.errors import ConfigError
from core.inbox import Inbox
from core.ledger import DeliveryLedger
from core.media.store import MediaStore
from core.messages import Attachment, InboundMessage, OutboundMessage
from core.record import record
from core.retry import Backoff
from core.tasks import LIBRARY_STOP_GRACE_SECONDS, TaskSet

log = logging.getLogger(__name__)

ALLOWED_UPDATES = ["message", "edited_message", "callback_query"]
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
TYPING_EVERY_SECONDS = 4.0
# Pauses between tries while the Bot API cannot be reached or refuses polling.
CONNECT_FIRST_SECONDS = 2.0
POLL_FIRST_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 60.0
BACKLOG_NOTICE = (
    "I was offline for a while: messages older than {age} were skipped. "
    "Please send again anything that still needs an answer."
)
_COMMAND_NAME = re.compile(r"^[a-z0-9_]{1,32}$")


@record
class TelegramOptions:
    """The adapter's settings, mapped from ``telegram:`` in the gateway config."""

    token: str = field(repr=False)
    base_url: str = "https://api.telegram.org/bot"
    base_file_url: str = "https://api.telegram.org/file/bot"
    mode: str = "polling"
    webhook_url: str = ""
    webhook_secret: str | None = field(default=None, repr=False)
    webhook_path: str = "updates"
    max_backlog_age: float = 3600.0
    require_mention: bool = True
    handle_edits: bool = False
    access: Access = Access()
    max_file_bytes: int = 20_000_000
    cache_dir: Path = Path(".")
    poll_timeout_seconds: int = 30
    media: MediaStore | None = None  # where the files replies carry are stored
    stream_updates_per_second: float | None = 20.0  # None: replies arrive whole


class TelegramAdapter:
    """See the module docstring."""

    name = "telegram"
    push = True

    def __init__(self, options: TelegramOptions, *, now: Callable[[], float] = time.time) -> None:
        self.options = options
        self._now = now
        # PTB 23's time periods (``RetryAfter.retry_after``) now: PTB 22 warns each time
        # one is read as seconds, even inside its own constructor. Our reads take both.
        os.environ.setdefault("PTB_TIMEDELTA", "1")
        self._bot = Bot(
            options.token,
            base_url=options.base_url,
            base_file_url=options.base_file_url,
            request=HTTPXRequest(connection_pool_size=64),
            get_updates_request=HTTPXRequest(read_timeout=options.poll_timeout_seconds + 15.0),
        )
        self._inbox: Inbox | None = None
        self._me: BotIdentity | None = None
        self._tasks = TaskSet("telegram")
        self._told_backlog: set[int] = set()
        keyboards = Keyboards()
        self._replies = ReplySender(self._bot, keyboards, options.media)
        self._taps = Taps(self._bot, keyboards, lambda: self._me, now)
        # Typing is refreshed every 4 s (Telegram shows it for 5).
        self._typing = TypingIndicator(self._send_typing, self._tasks, every=TYPING_EVERY_SECONDS)
        self.previews = previews_for(self._bot, self._tasks, options.stream_updates_per_second)
        self.healthy = False

    # lifecycle
    def install(self, app: FastAPI) -> None:
        """Serve ``POST /telegram/{path}`` on the gateway's app (webhook mode only)."""
        if self.options.mode == "webhook":
            app.router.add_api_route(
                "/telegram/{path}", self.post_update, methods=["POST"], include_in_schema=False
            )

    async def start(self, inbox: Inbox, ledger: DeliveryLedger) -> None:
        """Connect and begin receiving; if Telegram cannot be reached, keep trying in the
        background so the rest of the gateway starts (``healthy`` stays False meanwhile).
        A token Telegram rejects stops start-up."""
        self._inbox = inbox
        self._replies.progress.record = ledger.parts_sent
        if self.previews is not None:
            self.previews.ledger = ledger
        try:
            await self._connect(inbox)
        except InvalidToken as exc:
            raise ConfigError("telegram.bot_token", "Telegram rejected the token") from exc
        except (NetworkError, TelegramError) as exc:
            log.warning("telegram: cannot reach the Bot API (%s); retrying in the background", exc)
            self._tasks.spawn(self._connect_later(inbox), name="connect")

    async def _connect_later(self, inbox: Inbox) -> None:
        backoff = Backoff(CONNECT_FIRST_SECONDS, BACKOFF_MAX_SECONDS)
        while True:
            await asyncio.sleep(backoff.next())  # backoff between connection attempts
            try:
                await self._connect(inbox)
                return
            except InvalidToken:
                log.error("telegram: the bot token was rejected; the adapter stays off")  # noqa: TRY400
                return
            except (NetworkError, TelegramError) as exc:
                log.warning("telegram: still cannot reach the Bot API: %s", exc)

    async def _connect(self, inbox: Inbox) -> None:
        await self._bot.initialize()
        self._me = BotIdentity(self._bot.id, self._bot.username)
        log.info("telegram: connected as @%s (%s mode)", self._me.username, self.options.mode)
        await self._register_commands(inbox.command_menu())
        if self.options.mode == "webhook":
            await self._bot.set_webhook(
                url=self.options.webhook_url,
                secret_token=self.options.webhook_secret,
                allowed_updates=ALLOWED_UPDATES,
                drop_pending_updates=False,
            )
        else:
            # A webhook left set would make getUpdates fail; its pending updates stay queued.
            await self._bot.delete_webhook(drop_pending_updates=False)
            self._tasks.spawn(self._poll(), name="poll")
        self.healthy = True

    async def stop(self) -> None:
        self.healthy = False
        await self._tasks.close(grace=LIBRARY_STOP_GRACE_SECONDS)  # bounded: see core.tasks
        try:
            await self._bot.shutdown()
        except TelegramError as exc:
            log.warning("telegram: shutdown: %s", exc)

    async def _register_commands(self, menu: list[tuple[str, str]]) -> None:
        commands = [
            BotCommand(name, (summary or name)[:256])
            for name, summary in menu
            if _COMMAND_NAME.match(name)
        ]
        try:
            await self._bot.set_my_commands(commands)
        except TelegramError as exc:  # a menu is a convenience: never a reason not to start
            log.warning("telegram: could not register the command menu: %s", exc)

    # polling
    async def _poll(self) -> None:
        offset: int | None = None
        backoff = Backoff(POLL_FIRST_SECONDS, BACKOFF_MAX_SECONDS)
        while True:
            try:
                updates = await self._bot.get_updates(
                    offset=offset,
                    timeout=self.options.poll_timeout_seconds,
                    allowed_updates=ALLOWED_UPDATES,
                )
            except Conflict:
                self.healthy = False
                pause = backoff.next()
                log.error(  # noqa: TRY400 - the traceback says nothing the message does not
                    "telegram: another process is polling this bot token (409 Conflict); "
                    "stop it or use webhook mode. Retrying in %.0f s",
                    pause,
                )
                await asyncio.sleep(pause)
                continue
            except RetryAfter as exc:
                await asyncio.sleep(retry_seconds(exc))
                continue
            except (NetworkError, TelegramError) as exc:
                self.healthy = False
                pause = backoff.next()
                log.warning("telegram: getUpdates failed (%s); retrying in %.0f s", exc, pause)
                await asyncio.sleep(pause)
                continue
            stored_all = True
            for update in updates:
                try:
                    await self.ingest(update)
                except Exception:
                    # Not stored: the offset stays, so Telegram hands the update over again.
                    log.exception("telegram: update %s not stored; retrying", update.update_id)
                    stored_all = False
                    break
                offset = update.update_id + 1
            self.healthy = stored_all
            if stored_all:
                backoff.reset()
            else:
                await asyncio.sleep(backoff.next())

    # webhook
    async def post_update(self, path: str, request: Request) -> Response:
        expected = self.options.webhook_secret or ""
        given = request.headers.get(SECRET_HEADER, "")
        if path != self.options.webhook_path or not hmac.compare_digest(
            given.encode(), expected.encode()
        ):
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        try:
            data = json.loads(await request.body())
            update = Update.de_json(data, self._bot)
        except (ValueError, TypeError, KeyError):
            return JSONResponse({"error": "not a Telegram update"}, status_code=400)
        try:
            await self.ingest(update)
        except Exception:
            log.exception("telegram: update %s not stored", update.update_id)
            return JSONResponse({"error": "not stored; retry"}, status_code=503)
        return JSONResponse({"ok": True})

    # ingest
    async def ingest(self, update: Update) -> None:
        """Commit ``update`` to the inbox (or answer it directly); raise if not stored."""
        assert self._inbox is not None
        assert self._me is not None
        o = self.options
        if update.callback_query is not None:  # a button tapped under a reply
            await self._taps.take(self._inbox, update, o.access)
            return
        decision = decide(
            update,
            self._me,
            o.access,
            now=self._now(),
            max_backlog_age=o.max_backlog_age,
            require_mention=o.require_mention,
            handle_edits=o.handle_edits,
        )
        if isinstance(decision, Ignored):
            log.debug("telegram: update %s ignored: %s", update.update_id, decision.reason)
        elif isinstance(decision, TooOld):
            await self._skip_old(update, decision.incoming)
        else:
            await self._accept(update, decision)

    async def _skip_old(self, update: Update, incoming: Incoming) -> None:
        """Tell a chat once that its messages from while we were down were skipped (only
        a chat whose sender would be let in: a stranger learns nothing)."""
        assert self._inbox is not None
        chat = int(incoming.chat_id)
        if chat in self._told_backlog or not await self._inbox.admits(
            self._inbound(update, incoming, "", ())
        ):
            return
        self._told_backlog.add(chat)
        age = _age_text(self.options.max_backlog_age)
        await self._notice(chat, _thread_of(incoming), BACKLOG_NOTICE.format(age=age))

    async def _accept(self, update: Update, incoming: Incoming) -> None:
        assert self._inbox is not None
        inbox = self._inbox
        attachments: list[Attachment] = []
        notes: list[str] = []
        # A stranger's files are not fetched: ask the policy first when there are any.
        if incoming.files and await inbox.admits(self._inbound(update, incoming, "", ())):
            attachments, notes = await self._download(incoming.files)
        text = "\n".join(p for p in (incoming.text, *notes) if p)
        msg = self._inbound(update, incoming, text or "(sent a file)", attachments)
        admission = await inbox.accept(msg)
        self._replies.reachable_again(incoming.chat_id)  # they wrote: they unblocked us
        if isinstance(admission, TurnedAway):
            if admission.reply:
                await self._notice(int(incoming.chat_id), _thread_of(incoming), admission.reply)
        elif admission.created:
            key = (int(incoming.chat_id), _thread_of(incoming))
            self._typing.show(key, inbox.replies(admission.item))

    def _inbound(
        self, update: Update, incoming: Incoming, text: str, attachments: Sequence[Attachment]
    ) -> InboundMessage:
        assert self._me is not None
        return InboundMessage(
            platform=self.name,
            chat_id=incoming.chat_id,
            user_id=incoming.user_id,
            text=text,
            platform_message_id=str(incoming.message.message_id),
            dedup_key=f"{self._me.id}:{update.update_id}",
            received_at=self._now(),
            thread_id=incoming.thread_id,
            user_name=incoming.user_name,
            reply_to=incoming.reply_to,
            is_group=incoming.is_group,
            attachments=tuple(attachments),
            allow_listed=incoming.allowed,
        )

    async def _download(self, files: list[FileRef]) -> tuple[list[Attachment], list[str]]:
        attachments: list[Attachment] = []
        notes: list[str] = []
        folder = self.options.cache_dir / "telegram"
        for ref in files:
            if ref.size is not None and ref.size > self.options.max_file_bytes:
                notes.append(too_big(ref.name))
                continue
            try:
                file = await self._bot.get_file(ref.file_id)
                if file.file_size is not None and file.file_size > self.options.max_file_bytes:
                    notes.append(too_big(ref.name))
                    continue
                data = await file.download_as_bytearray()
                attachment, note = await save_attachment(
                    folder, file.file_unique_id, ref.name, ref.mime_type, bytes(data), ref.kind
                )
            except (TelegramError, OSError) as exc:
                log.warning("telegram: could not download %s: %s", ref.name, exc)
                notes.append(not_downloaded(ref.name))
                continue
            attachments.append(attachment)
            notes.append(note)
        return attachments, notes

    async def _send_typing(self, key: tuple[int, int | None]) -> None:
        chat_id, thread = key
        await self._bot.send_chat_action(chat_id, ChatAction.TYPING, message_thread_id=thread)

    async def _notice(self, chat_id: int, thread: int | None, text: str) -> None:
        try:
            await self._bot.send_message(chat_id, text, message_thread_id=thread)
        except TelegramError as exc:
            log.warning("telegram: notice to %s not sent: %s", chat_id, exc)

    # replies
    async def send(self, msg: OutboundMessage) -> str | None:
        """Send a reply as one or more messages; raise ``DeliveryError`` to retry later."""
        return await self._replies.send(msg)


def _thread_of(incoming: Incoming) -> int | None:
    return int(incoming.thread_id) if incoming.thread_id else None


def _age_text(seconds: float) -> str:
    if seconds % 3600 == 0:
        hours = int(seconds // 3600)
        return f"{hours} hour{'s' if hours != 1 else ''}"
    return f"{int(seconds // 60)} minutes"
