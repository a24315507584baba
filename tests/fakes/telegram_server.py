"""A fake Telegram Bot API server on 127.0.0.1 for driving python-telegram-bot in tests.

Point the real library at it and script the world from the test::

    async with FakeTelegram() as fake:
        bot = telegram.Bot(fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url)
        fake.push_update(fake.private_message("hello"))
        ...  # the code under test polls, answers
        [reply] = await fake.wait_sent(1)
        assert reply.chat_id == DEFAULT_USER["id"]

What it serves, under ``/bot{token}/{method}`` (POST or GET, JSON, form-encoded or
multipart bodies, method names case-insensitive as in Telegram):

* ``getMe``, ``getUpdates`` (offset confirmation, ``limit``, long-poll ``timeout``,
  ``allowed_updates``; a newer poll ends an older one with 409; 409 while a webhook is
  set), ``setWebhook``, ``deleteWebhook``, ``getWebhookInfo``;
* ``sendPhoto``, ``sendDocument`` and ``sendVoice`` uploads (``telegram_media``), recorded
  in ``sent_files``;
* ``sendMessage`` and ``editMessageText`` with Telegram's validation (empty text, more
  than 4096 UTF-16 code units, entities out of bounds or malformed, a simple MarkdownV2
  reserved-character check, ``message_thread_id`` outside a forum, unknown reply target);
* streamed previews: ``sendMessageDraft`` (private chats) and ``deleteMessage``
  (``tests.fakes.telegram_drafts``);
* inline keyboards (``reply_markup``, kept on the message), ``answerCallbackQuery`` and
  ``editMessageReplyMarkup``, and ``tap`` to build the update a tap on a button makes;
* ``sendChatAction``, ``setMyCommands``, ``getMyCommands``, ``deleteMyCommands``,
  ``getFile`` (registered files), ``close`` and ``logOut``;
* file downloads under ``/file/bot{token}/{file_path}``.

Everything is recorded (``requests``, each with its receive time, ``calls``, ``sent``,
``edits``, ``drafts``, ``deletions``, ``actions``, ``commands``, ``webhook``,
``callback_answers``, ``markup_edits``); ``wait_*`` helpers wake on events, never by
sleeping. Failures are injected per method (``fail``; a 429 with ``flood=True`` also holds
its chat, as Telegram's flood control does) and per chat (``block_chat``).

The server itself is a ``tests.fakes.loopback.LoopbackServer``. This module is the
facade (routing, recorded state, waits, failure injection) and re-exports what tests
import; the update side (``push_update``, ``deliver_webhook``, ``getUpdates``, webhooks) is
``tests.fakes.telegram_updates``, the bot's actions (``sendMessage`` and the other methods)
``tests.fakes.telegram_methods``, Telegram's checks on sent text ``tests.fakes.telegram_checks``,
request decoding and the error envelope ``tests.fakes.telegram_wire``, and the JSON builders
(users, chats, entities, messages, updates) ``tests.fakes.telegram_payloads``.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.loopback import LoopbackServer
from tests.fakes.telegram_buttons import ButtonsMixin, CallbackAnswer, MarkupEdit
from tests.fakes.telegram_checks import MAX_MESSAGE_UTF16
from tests.fakes.telegram_drafts import Deletion, Draft, DraftsMixin
from tests.fakes.telegram_media import MediaSendsMixin, SentFile
from tests.fakes.telegram_methods import (
    MAX_DOWNLOAD_BYTES,
    ChatAction,
    Edit,
    MethodsMixin,
    SentMessage,
    scope_key,
)
from tests.fakes.telegram_payloads import (
    DEFAULT_BOT_USERNAME,
    DEFAULT_GROUP_ID,
    DEFAULT_TOKEN,
    DEFAULT_USER,
    Json,
    MessageBuildersMixin,
    StoredFile,
    edited,
    entity,
    entity_for,
    group_chat,
    make_user,
    private_chat,
    update_kind,
    utf16_len,
)
from tests.fakes.telegram_updates import UpdatesMixin, WebhookState
from tests.fakes.telegram_wire import (
    BLOCKED_BY_USER,
    CONFLICT_OTHER_POLL,
    CONFLICT_WEBHOOK,
    DEFAULT_DESCRIPTIONS,
    KICKED_FROM_GROUP,
    ApiError,
    decode_parameters,
    error_response,
)

__all__ = [
    "BLOCKED_BY_USER",
    "CONFLICT_OTHER_POLL",
    "CONFLICT_WEBHOOK",
    "DEFAULT_BOT_USERNAME",
    "DEFAULT_GROUP_ID",
    "DEFAULT_TOKEN",
    "DEFAULT_USER",
    "KICKED_FROM_GROUP",
    "MAX_DOWNLOAD_BYTES",
    "MAX_MESSAGE_UTF16",
    "ApiCall",
    "ApiError",
    "CallbackAnswer",
    "ChatAction",
    "Deletion",
    "Draft",
    "Edit",
    "FakeTelegram",
    "Failure",
    "Json",
    "MarkupEdit",
    "SentFile",
    "SentMessage",
    "StoredFile",
    "WebhookState",
    "edited",
    "entity",
    "entity_for",
    "group_chat",
    "make_user",
    "private_chat",
    "update_kind",
    "utf16_len",
]


@dataclass(frozen=True, slots=True)
class Failure:
    """A scripted error for the next call of one method."""

    status: int
    description: str
    retry_after: int | None = None
    flood: bool = False  # a 429 that holds its chat for ``retry_after`` seconds


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One request as the fake received it: canonical method name, decoded parameters
    and when it arrived (``time.monotonic()``)."""

    method: str
    params: Json
    at: float = field(default_factory=time.monotonic)


# -- the fake -----------------------------------------------------------------------------


class FakeTelegram(
    UpdatesMixin, MethodsMixin, MediaSendsMixin, DraftsMixin, ButtonsMixin, MessageBuildersMixin
):
    """A scripted Telegram Bot API server; use as ``async with``.

    ``token`` is the only token accepted (others get 401); the bot's id is the token's
    numeric prefix. ``first_update_id`` is where ``push_update`` starts numbering.
    """

    def __init__(
        self,
        *,
        token: str = DEFAULT_TOKEN,
        bot_username: str = DEFAULT_BOT_USERNAME,
        bot_first_name: str = "Chatgate Test",
        first_update_id: int = 100_001,
    ) -> None:
        self.token = token
        self.bot_id = int(token.split(":", 1)[0])
        self.bot_username = bot_username
        self.bot_first_name = bot_first_name
        self.requests: list[ApiCall] = []
        self.sent: list[SentMessage] = []
        self.sent_files: list[SentFile] = []
        self.edits: list[Edit] = []
        self.drafts: list[Draft] = []
        self.deletions: list[Deletion] = []
        self.actions: list[ChatAction] = []
        self.webhook = WebhookState()
        self.command_sets: dict[tuple[str, str], list[Json]] = {}
        self.pending: list[Json] = []  # updates not yet confirmed, in order
        self.confirmed_offset = 0  # every update_id below this has been confirmed
        self.allowed_updates: list[str] = []  # as last given to getUpdates/setWebhook
        self.files: dict[str, StoredFile] = {}
        self.blocked_chats: set[int] = set()
        self.chats: dict[int, Json] = {}
        self.messages: dict[tuple[int, int], Json] = {}
        self.callback_queries: dict[str, Json] = {}
        self.answered_queries: set[str] = set()
        self.callback_answers: list[CallbackAnswer] = []
        self.markup_edits: list[MarkupEdit] = []
        self._query_ids = itertools.count(4_417_000_000_000_000_001)
        self._failures: dict[str, deque[Failure | None]] = {}  # None: let one through
        self._flooded: dict[str, float] = {}  # chat id -> monotonic time its hold ends
        self._update_ids = itertools.count(first_update_id)
        self._message_ids = itertools.count(1)
        self._file_ids = itertools.count(1)
        self._poll_numbers = itertools.count(1)
        self._poll = None  # typed by UpdatesMixin
        self._new_update = asyncio.Event()
        self._changed = asyncio.Event()
        self._closing = asyncio.Event()
        self._handlers: dict[str, Callable[[Json], Awaitable[Any]]] = {
            "getMe": self._get_me,
            "getUpdates": self._get_updates,
            "setWebhook": self._set_webhook,
            "deleteWebhook": self._delete_webhook,
            "getWebhookInfo": self._get_webhook_info,
            "sendMessage": self._send_message,
            "sendPhoto": self._send_photo,
            "sendDocument": self._send_document,
            "sendVoice": self._send_voice,
            "editMessageText": self._edit_message_text,
            "sendMessageDraft": self._send_message_draft,
            "deleteMessage": self._delete_message,
            "editMessageReplyMarkup": self._edit_message_reply_markup,
            "answerCallbackQuery": self._answer_callback_query,
            "sendChatAction": self._send_chat_action,
            "setMyCommands": self._set_my_commands,
            "getMyCommands": self._get_my_commands,
            "deleteMyCommands": self._delete_my_commands,
            "getFile": self._get_file,
            "close": self._no_op,
            "logOut": self._no_op,
        }
        self._canonical = {name.lower(): name for name in self._handlers}
        routes = [
            Route("/bot{token}/{method}", self._api, methods=["GET", "POST"]),
            Route("/file/bot{token}/{file_path:path}", self._download, methods=["GET"]),
        ]
        self._server = LoopbackServer(Starlette(routes=routes))

    # -- addresses and lifecycle --------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return self._server.url

    @property
    def base_url(self) -> str:
        """PTB's ``base_url``: the token and method are appended to it."""
        return f"{self._server.url}/bot"

    @property
    def base_file_url(self) -> str:
        """PTB's ``base_file_url``: the token and file path are appended to it."""
        return f"{self._server.url}/file/bot"

    @property
    def bot_user(self) -> Json:
        """The bot's ``User`` object, as ``getMe`` returns it."""
        return {
            "id": self.bot_id,
            "is_bot": True,
            "first_name": self.bot_first_name,
            "username": self.bot_username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }

    def gateway_env(self, **extra: str) -> dict[str, str]:
        """Environment variables that point chatgate's Telegram adapter at this fake."""
        return {
            "TELEGRAM_BOT_TOKEN": self.token,
            "CHATGATE_TELEGRAM_BASE_URL": self.base_url,
            "CHATGATE_TELEGRAM_BASE_FILE_URL": self.base_file_url,
            **extra,
        }

    async def __aenter__(self) -> Self:
        await self._server.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing.set()  # ends long polls so shutdown is prompt
        await self._server.stop()

    # -- recorded state -----------------------------------------------------------------

    @property
    def calls(self) -> list[str]:
        """Method names of every request, in order (failed ones included)."""
        return [call.method for call in self.requests]

    def calls_to(self, method: str) -> list[ApiCall]:
        """Recorded requests for one method."""
        name = self._canonical.get(method.lower(), method)
        return [call for call in self.requests if call.method == name]

    @property
    def commands(self) -> list[Json]:
        """Commands set for the default scope and no language (``[]`` when none)."""
        return self.command_sets.get((scope_key(None), ""), [])

    def sent_to(self, chat_id: int) -> list[SentMessage]:
        """Messages sent to one chat, in order."""
        return [message for message in self.sent if message.chat_id == chat_id]

    # -- waiting --------------------------------------------------------------------------

    async def wait_until(
        self,
        predicate: Callable[[], bool],
        *,
        timeout: float = 10.0,  # noqa: ASYNC109
        what: str = "condition",
    ) -> None:
        """Return once ``predicate()`` holds; re-checked whenever a request is handled."""
        try:
            async with asyncio.timeout(timeout):
                while not predicate():
                    await self._changed.wait()
        except TimeoutError:
            raise TimeoutError(
                f"fake Telegram: timed out after {timeout}s waiting for {what}; "
                f"calls so far: {self.calls}"
            ) from None

    async def wait_sent(self, n: int = 1, *, timeout: float = 10.0) -> list[SentMessage]:  # noqa: ASYNC109
        """Return the first ``n`` sent messages once at least ``n`` have been sent."""
        await self.wait_until(lambda: len(self.sent) >= n, timeout=timeout, what=f"{n} sends")
        return self.sent[:n]

    async def wait_call(self, method: str, n: int = 1, *, timeout: float = 10.0) -> ApiCall:  # noqa: ASYNC109
        """Return the ``n``-th request for ``method`` once it has arrived."""
        await self.wait_until(
            lambda: len(self.calls_to(method)) >= n, timeout=timeout, what=f"{n}x {method}"
        )
        return self.calls_to(method)[n - 1]

    async def wait_files(self, n: int = 1, *, timeout: float = 10.0) -> list[SentFile]:  # noqa: ASYNC109
        """Return the first ``n`` files sent once at least ``n`` have been sent."""
        await self.wait_until(
            lambda: len(self.sent_files) >= n, timeout=timeout, what=f"{n} files sent"
        )
        return self.sent_files[:n]

    async def wait_actions(self, n: int = 1, *, timeout: float = 10.0) -> list[ChatAction]:  # noqa: ASYNC109
        """Return the first ``n`` chat actions once at least ``n`` have been sent."""
        await self.wait_until(
            lambda: len(self.actions) >= n, timeout=timeout, what=f"{n} chat actions"
        )
        return self.actions[:n]

    async def wait_edits(self, n: int = 1, *, timeout: float = 10.0) -> list[Edit]:  # noqa: ASYNC109
        """Return the first ``n`` edits once at least ``n`` have succeeded."""
        await self.wait_until(lambda: len(self.edits) >= n, timeout=timeout, what=f"{n} edits")
        return self.edits[:n]

    async def wait_confirmed(self, update_id: int, *, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Return once a getUpdates offset has confirmed ``update_id``."""
        await self.wait_until(
            lambda: self.confirmed_offset > update_id,
            timeout=timeout,
            what=f"offset past update {update_id}",
        )

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # -- failure injection ----------------------------------------------------------------

    def fail(
        self,
        method: str,
        *,
        status: int = 429,
        retry_after: int | None = None,
        description: str | None = None,
        times: int = 1,
        after: int = 0,
        flood: bool = False,
    ) -> None:
        """Answer the next ``times`` calls of ``method`` with an error (queued in order),
        once ``after`` more calls have succeeded.

        429 carries ``parameters.retry_after`` (default 1 s); with ``flood``, every call
        to the same chat is then answered 429 (with the pause left) until it is over.
        Default descriptions are Telegram's: 409 is the "terminated by other getUpdates
        request" conflict, 403 "bot was blocked by the user", 5xx the plain HTTP phrases.
        """
        if status == 429:
            retry_after = 1 if retry_after is None else retry_after
            default = f"Too Many Requests: retry after {retry_after}"
        else:
            default = DEFAULT_DESCRIPTIONS.get(status, f"Error {status}")
        failure = Failure(status, description or default, retry_after, flood and status == 429)
        name = self._canonical.get(method.lower(), method)
        self._failures.setdefault(name, deque()).extend([None] * after + [failure] * times)

    def clear_failures(self) -> None:
        """Drop the injected failures not yet consumed: Telegram is well again."""
        self._failures.clear()

    def block_chat(self, chat_id: int) -> None:
        """From now on every send to ``chat_id`` fails 403 (the user blocked the bot)."""
        self.blocked_chats.add(chat_id)

    def unblock_chat(self, chat_id: int) -> None:
        """Undo ``block_chat``."""
        self.blocked_chats.discard(chat_id)

    @property
    def pending_failures(self) -> int:
        """Injected failures not yet consumed."""
        return sum(len(queue) for queue in self._failures.values())

    # -- serving --------------------------------------------------------------------------

    async def _api(self, request: Request) -> Response:
        if request.path_params["token"] != self.token:
            return error_response(ApiError(401, "Unauthorized"))
        name = self._canonical.get(str(request.path_params["method"]).lower())
        params = await decode_parameters(request)
        self.requests.append(ApiCall(name or request.path_params["method"], params))
        self._notify()
        if name is None:
            self._notify()
            return error_response(ApiError(404, "Not Found"))
        try:
            self._raise_injected(name, params)
            result = await self._handlers[name](params)
        except ApiError as error:
            return error_response(error)
        finally:
            self._notify()
        return JSONResponse({"ok": True, "result": result})

    def _raise_injected(self, name: str, params: Json) -> None:
        chat = str(params.get("chat_id", ""))
        left = self._flooded.get(chat, 0.0) - time.monotonic() if chat else 0.0
        if left > 0:
            seconds = math.ceil(left)
            raise ApiError(429, f"Too Many Requests: retry after {seconds}", seconds)
        queue = self._failures.get(name)
        if queue:
            failure = queue.popleft()
            if failure is None:
                return
            if failure.flood and chat and failure.retry_after:
                self._flooded[chat] = time.monotonic() + failure.retry_after
            raise ApiError(failure.status, failure.description, failure.retry_after)

    async def _download(self, request: Request) -> Response:
        if request.path_params["token"] != self.token:
            return error_response(ApiError(401, "Unauthorized"))
        path = request.path_params["file_path"]
        stored = next((f for f in self.files.values() if f.file_path == path), None)
        if stored is None:
            return error_response(ApiError(404, "Not Found"))
        return Response(stored.data, media_type="application/octet-stream")
