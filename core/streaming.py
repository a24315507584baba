"""Replies shown while they are generated, with one owner for the preview and the final.

While a model turn runs, the core hands what the model generates to a ``Preview`` that
the adapter owning the chat opened (``Previews.open``): each text delta as it arrives,
and one short progress line per tool call ("searching past sessions…"). A preview is
only ever a view. The reply itself is committed to the outbox when the turn ends and
delivered once, like every reply, by the adapter's ``send``.

The one owner: where an adapter shows the preview in a message of its own (an edited
message in a group, not an ephemeral draft) it records that message's id through
``DeliveryLedger.preview_shown``. The turn's last reply carries it as
``OutboundMessage.preview_id``, and ``send`` edits that message into the reply's first
part instead of sending a new one. An edit to the same text changes nothing, so a retry
or a restart in mid-delivery never shows the final twice; a turn run again after a
crash gets the old id back (``PreviewRequest.resume_id``) and streams into the same
message.

What an adapter's ``Preview`` promises:

- ``text`` and ``tool`` never raise and never wait for the platform: updates are paced
  (chat platforms: at most one a second per chat, within the bot's budget) and sent in
  the background; a failed update is logged and dropped, it never blocks the final.
- ``finish`` stops updating, waits for an update in flight, and returns the platform
  message the final reply takes over (None: the final is sent new, e.g. after a draft).
- ``discard`` stops updating and removes the preview message: the turn ended with no
  reply to take it over (``/stop``).

``Streaming`` is the core's side: it opens a guarded ``TurnPreview`` per model turn when
streaming is on (``streaming.enabled``) and the chat's adapter streams.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from core.messages import InboundMessage
from core.record import record

log = logging.getLogger(__name__)

TextSink = Callable[[str], Awaitable[None]]


@record
class PreviewRequest:
    """What an adapter needs to open a preview: the inbox item's id and message, and the
    preview message a previous run of the same turn left (``InboxItem.preview_id``)."""

    inbox_id: int
    message: InboundMessage
    resume_id: str | None = None


class Preview(Protocol):
    """One turn's reply as it is generated, in one chat (see the module docstring)."""

    async def text(self, delta: str) -> None:
        """The model generated ``delta`` (the new piece, not the text so far)."""
        ...

    async def tool(self, line: str) -> None:
        """A tool call starts; ``line`` says what it does, in a few words."""
        ...

    async def finish(self) -> str | None:
        """Stop; the platform message id the final reply takes over, or None."""
        ...

    async def discard(self) -> None:
        """Stop and remove the preview: no reply will take it over."""
        ...


class Previews(Protocol):
    """An adapter that can show replies as they are generated."""

    def open(self, request: PreviewRequest) -> Preview | None:
        """A preview for the chat of ``request.message``, or None where this chat does
        not stream (its platform's ``streaming: off``, or a chat that cannot)."""
        ...


# What a tool call shows in a preview; a tool not named here shows "using <name>…".
TOOL_LINES: dict[str, str] = {
    "session_search": "searching past sessions…",
    "memory": "updating memory…",
    "skills_list": "looking through skills…",
    "skill_view": "reading a skill…",
    "skill_manage": "updating a skill…",
    "cronjob": "scheduling…",
    "send_file": "attaching a file…",
}


def tool_line(name: str) -> str:
    """The progress line for a call of the tool called ``name``."""
    found = TOOL_LINES.get(name)
    if found is not None:
        return found
    if name.startswith("mcp_"):
        return f"using {name[4:].replace('_', ' ', 1)}…"
    return f"using {name}…"


class TurnPreview:
    """One model turn's preview, or none: every call is guarded, so a broken adapter
    preview costs the turn nothing. ``on_text`` is what the model streams into (None:
    nothing to stream to, the model is called as configured)."""

    def __init__(self, preview: Preview | None, resume_id: str | None = None) -> None:
        self._preview = preview
        self._resume_id = resume_id
        self._closed = False
        self.on_text: TextSink | None = self._text if preview is not None else None

    async def _text(self, delta: str) -> None:
        if self._preview is not None and not self._closed:
            try:
                await self._preview.text(delta)
            except Exception:  # a preview is a view: it never fails the turn
                log.exception("preview update failed; the reply is still sent once done")

    async def tool(self, name: str) -> None:
        if self._preview is not None and not self._closed:
            try:
                await self._preview.tool(tool_line(name))
            except Exception:  # as above
                log.exception("preview update failed; the reply is still sent once done")

    async def finish(self) -> str | None:
        """Stop; the message the turn's last reply takes over (the one a previous run of
        the turn left when this one showed none)."""
        shown = None
        if self._preview is not None and not self._closed:
            self._closed = True
            try:
                shown = await self._preview.finish()
            except Exception:  # the final is sent new instead
                log.exception("closing a preview failed; the reply is sent as a new message")
        return shown or self._resume_id

    async def discard(self) -> None:
        if self._preview is not None and not self._closed:
            self._closed = True
            try:
                await self._preview.discard()
            except Exception:  # a stale preview is untidy, not lost work
                log.exception("removing a preview failed")


NO_PREVIEW = TurnPreview(None)


class Streaming:
    """Opens each model turn's preview through the adapter owning its chat."""

    def __init__(self, previews: Mapping[str, Previews], *, enabled: bool = True) -> None:
        self._previews = dict(previews) if enabled else {}

    def open(self, inbox_id: int, message: InboundMessage, resume_id: str | None) -> TurnPreview:
        previews = self._previews.get(message.platform)
        preview = None
        if previews is not None:
            try:
                preview = previews.open(PreviewRequest(inbox_id, message, resume_id))
            except Exception:  # as above: the turn runs without a preview
                log.exception("opening a preview failed; the reply is sent when done")
        return TurnPreview(preview, resume_id)
