"""Discord replies shown while they are generated: one message, sent then edited.

``DiscordPreviews`` is the adapter's ``previews`` (``core.streaming``) when
``discord.streaming`` is ``auto``. Each preview is an ``adapters.preview.PacedPreview``
over a ``MessageSurface``: the first update sends a message where the final will go
(the channel, thread or DM, as a reply to the person's message), records its id with
``DeliveryLedger.preview_shown`` before any edit, and later updates edit it, at most
one a second per channel within the bot's budget (``discord.stream_updates_per_second``,
one ``PreviewPacer`` for the bot). A turn run again after a restart starts by editing
the message its first run showed. The final reply takes the message over
(``adapters.discord.send``): its first part is an edit of it.

discord.py waits out rate limits itself: a request may sleep in its bucket, or after a
429, for seconds. A preview never holds the turn's end for that: ``finish`` gives an
update in flight ``CUT_SECONDS`` (one update's time), then lets it go. Cancelling it
instead would be worse: an edit that already landed may be sleeping in discord.py's
bucket (cancelled there, it leaves the bucket to be slept on again by the final's own
edit), and a first send cancelled in flight may leave a message whose id never comes
back. So the preview is abandoned: the final is sent as a new message (on the send
bucket, not behind the stuck edit), and the preview message is deleted once the update
has settled, so an edit that lands late edits a message about to go, never the final.
Only the message a previous run showed, which the final takes over whatever happens
here, keeps no late edit: that one is cancelled.

A slash command's answer goes through its interaction ("thinking…" shows meanwhile),
so those turns have no preview. A preview message deleted by someone is left alone:
no more updates, and the final is sent new.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import aiohttp
import discord

from adapters.discord.send import CANNOT_REPLY_WITHOUT_HISTORY, NO_MENTIONS, Interactions
from adapters.preview import PacedPreview, PreviewPacer
from core.errors import ChatgateError, DeliveryError
from core.ledger import DeliveryLedger
from core.streaming import Preview, PreviewRequest
from core.tasks import TaskSet

log = logging.getLogger(__name__)

PREVIEW_INTERVAL = 1.0  # seconds between two updates of one channel's preview
PREVIEW_LIMIT = 2000  # characters in one Discord message
CUT_SECONDS = 1.0  # how long ``finish`` waits for an update in flight

Record = Callable[[str], Awaitable[None]]
NETWORK_ERRORS = (discord.HTTPException, aiohttp.ClientError, OSError, RuntimeError)


class DiscordPreviews:
    """See the module docstring; ``start`` hands it the ledger."""

    def __init__(
        self,
        client: Callable[[], discord.Client],
        interactions: Interactions,
        tasks: TaskSet,
        *,
        updates_per_second: float,
        cut_seconds: float = CUT_SECONDS,
    ) -> None:
        self._client = client
        self._interactions = interactions
        self._tasks = tasks
        self._cut_seconds = cut_seconds
        self._pacer = PreviewPacer(interval=PREVIEW_INTERVAL, per_second=updates_per_second)
        self._ledger: DeliveryLedger | None = None

    def start(self, ledger: DeliveryLedger) -> None:
        self._ledger = ledger

    def open(self, request: PreviewRequest) -> Preview | None:
        msg = request.message
        if self._ledger is None or self._interactions.get(msg.platform_message_id) is not None:
            return None  # not started; or a slash command, answered through its interaction
        channel = msg.thread_id or msg.chat_id
        ledger, inbox_id = self._ledger, request.inbox_id

        async def record(message_id: str) -> None:
            await ledger.preview_shown(inbox_id, message_id)

        surface = MessageSurface(
            self._client,
            int(channel),
            msg.platform_message_id,
            record,
            self._tasks,
            nonce=f"pv{inbox_id:x}",
            resume_id=request.resume_id,
        )
        paced = PacedPreview(surface, self._pacer, channel, self._tasks, limit=PREVIEW_LIMIT)
        return CutPreview(paced, surface, self._cut_seconds)


class CutPreview:
    """A ``PacedPreview`` whose ``finish`` and ``discard`` wait at most ``cut_seconds``
    for an update in flight (the module docstring)."""

    def __init__(self, paced: PacedPreview, surface: MessageSurface, cut_seconds: float) -> None:
        self._paced = paced
        self._surface = surface
        self._cut_seconds = cut_seconds

    async def text(self, delta: str) -> None:
        await self._paced.text(delta)

    async def tool(self, line: str) -> None:
        await self._paced.tool(line)

    async def finish(self) -> str | None:
        cut = asyncio.get_running_loop().call_later(self._cut_seconds, self._surface.cut)
        try:
            return await self._paced.finish()
        finally:
            cut.cancel()

    async def discard(self) -> None:
        cut = asyncio.get_running_loop().call_later(self._cut_seconds, self._surface.cut)
        try:
            await self._paced.discard()
        finally:
            cut.cancel()


class MessageSurface:
    """One preview message (an ``adapters.preview.PreviewSurface``)."""

    def __init__(
        self,
        client: Callable[[], discord.Client],
        channel_id: int,
        reply_to: str,
        record: Record,
        tasks: TaskSet,
        *,
        nonce: str,
        resume_id: str | None = None,
    ) -> None:
        self._client = client
        self._channel_id = channel_id
        self._reply_to = reply_to
        self._record = record
        self._tasks = tasks
        # Discord answers a send repeated with this nonce within minutes with the first
        # message: a retried send, or a turn run again after a crash that came before
        # the id was recorded, shows one preview, not two.
        self._nonce = nonce
        self._resume_id = resume_id
        self._id = resume_id  # the message shown, once there is one
        self._recorded = resume_id is not None
        self._gone = False  # deleted by someone: no more updates
        self._abandoned = False
        self._cut: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def cut(self) -> None:
        """Stop waiting for the update in flight (``finish`` has waited long enough)."""
        if not self._cut.done():
            self._cut.set_result(None)

    async def show(self, text: str) -> None:
        if self._gone or self._abandoned:
            return
        update = self._tasks.spawn(self._update(text), name="preview-update")
        await asyncio.wait([update, self._cut], return_when=asyncio.FIRST_COMPLETED)
        if not update.done():
            self._abandon(update)
            return
        failure = update.result()
        if failure is not None:
            raise failure

    async def close(self) -> str | None:
        return None if self._abandoned or self._gone else self._id

    async def remove(self) -> None:
        if self._id is not None and not self._abandoned and not self._gone:
            # In the background: a delete waiting on a rate limit must not hold a /stop.
            self._tasks.spawn(self._delete(self._id), name="preview-remove")

    async def _update(self, text: str) -> Exception | None:
        """Show ``text``; a failure is returned, not raised (a task's exception would be
        logged as a crash)."""
        try:
            sent = self._id is None
            if self._id is None:
                self._id = await self._send(text)
                if self._abandoned:
                    return None  # the final went out new: this message is deleted
            if not self._recorded:  # before any edit: a restart must find this message
                await self._record(self._id)
                self._recorded = True
            if not sent:
                await self._edit(self._id, text)
        except discord.NotFound:
            self._gone = True  # deleted: the final is sent new (``adapters.discord.send``)
        except NETWORK_ERRORS as exc:
            return DeliveryError(f"discord preview: {exc.__class__.__name__}: {exc}")
        except ChatgateError as exc:  # the ledger's store: the next update records it again
            return exc
        return None

    def _channel(self) -> discord.PartialMessageable:
        return self._client().get_partial_messageable(self._channel_id)

    async def _send(self, text: str) -> str:
        channel = self._channel()
        if self._reply_to.isdigit():
            ref = discord.MessageReference(
                message_id=int(self._reply_to),
                channel_id=self._channel_id,
                fail_if_not_exists=False,
            )
            try:
                sent = await channel.send(
                    text, reference=ref, allowed_mentions=NO_MENTIONS, nonce=self._nonce
                )
                return str(sent.id)
            except discord.HTTPException as exc:
                if exc.code != CANNOT_REPLY_WITHOUT_HISTORY:
                    raise
        sent = await channel.send(text, allowed_mentions=NO_MENTIONS, nonce=self._nonce)
        return str(sent.id)

    async def _edit(self, message_id: str, text: str) -> None:
        message = self._channel().get_partial_message(int(message_id))
        await message.edit(content=text, allowed_mentions=NO_MENTIONS)

    async def _delete(self, message_id: str) -> None:
        with contextlib.suppress(*NETWORK_ERRORS):  # a stale preview is untidy, not lost
            await self._channel().get_partial_message(int(message_id)).delete()

    def _abandon(self, update: asyncio.Task[Exception | None]) -> None:
        """The update in flight outlived the cut: the final goes out as a new message."""
        self._abandoned = True
        log.info("discord: preview update held up by a rate limit; the reply is sent new")
        if self._id is not None and self._id == self._resume_id:
            update.cancel()  # the final edits this message: no late edit may follow it
            return
        self._tasks.spawn(self._clear_after(update), name="preview-clear")

    async def _clear_after(self, update: asyncio.Task[Exception | None]) -> None:
        await asyncio.wait([update])
        if self._id is not None:
            await self._delete(self._id)
