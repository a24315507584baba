"""The hook points around sessions and turns, where features add what they bring.

A feature (memory, skills, compaction, the background review...) never edits the turn
code: it adds callables here, and the core calls them at fixed points, in the order
they were added:

- ``before_turn(start, item)``: may replace the session (compaction) and add notices
  sent ahead of the reply;
- ``turn_material(msg, session)``: text for this turn only, appended to the API copy of
  the user's message (recalled memory, a ``/skill``'s instructions), never stored as
  what the person wrote;
- ``slash_claims(msg)``: whether a feature answers a ``/word`` that is no chat command
  (``/<skill-name>``); a ``/word`` nothing claims is answered "unknown command", never
  sent to the model;
- ``turn_done(state, item, result)``: after a model turn committed its replies; a
  failing hook is logged and never touches the answer already given;
- ``session_started(row)`` and ``session_ended(session_id)``: a session comes into use
  in this process, or ends (``/new``, compaction);
- ``pre_compress(row, older)``: before compaction summarises ``older`` (the messages
  about to leave the live context); text a hook returns is added to the summariser's
  input as notes to keep;
- ``memory_written(write)``: after the ``memory`` tool (or ``/memory approve``) applied
  a change to MEMORY.md or USER.md (one call per changed entry);
- ``reply_media(item, reply)``: files to send with a model turn's reply (a spoken copy
  of it), stored before the turn commits; a failing hook is logged and the reply goes
  out without its files;
- ``status_lines(row)``: what ``/status`` adds about an open session;
- ``prompt_blocks(msg)``: blocks for a new session's volatile prompt tier, sorted by
  their ``order`` (indexes, then memory snapshots, then external memory). They may
  block (files, locks): the core calls them off the event loop.
- ``tool_guidance``: a paragraph of the stable tier per tool name, included when that
  tool is offered.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from core.media.refs import MediaRef
from core.memory.writes import MemoryWrite, OnMemoryWrite
from core.messages import InboundMessage
from core.record import record
from core.session_state import SessionState
from core.store.records import InboxItem, SessionRow, StoredMessage
from core.turn import TurnResult

log = logging.getLogger(__name__)


@dataclass(slots=True)
class TurnStart:
    """The session a turn is about to run in, and notices to send before its reply."""

    state: SessionState
    notices: list[str] = field(default_factory=list)


BeforeTurn = Callable[[TurnStart, InboxItem], Awaitable[None]]
TurnMaterial = Callable[[InboundMessage, SessionRow], Awaitable[str | None]]
SlashClaim = Callable[[InboundMessage], Awaitable[bool]]
TurnDone = Callable[[SessionState, InboxItem, TurnResult], Awaitable[None]]
SessionStarted = Callable[[SessionRow], Awaitable[None]]
SessionEnded = Callable[[str], Awaitable[None]]
StatusLines = Callable[[SessionRow], Awaitable[list[str]]]
ReplyMedia = Callable[[InboxItem, str], Awaitable[Sequence[MediaRef]]]
PreCompress = Callable[[SessionRow, Sequence[StoredMessage]], Awaitable[str | None]]
MemoryWritten = OnMemoryWrite

# Where a block sits in the volatile tier (lower first): the order DESIGN.md documents.
INDEX_BLOCKS = 10
MEMORY_BLOCKS = 20
EXTERNAL_BLOCKS = 30


@record
class PromptBlock:
    """Text for a new session's volatile tier; ``render`` may block (it runs in a thread).
    It gets the chat's message and the names of the tools the new session is offered, so
    a block about a tool (the skills index, read with ``skill_view``) leaves itself out
    where the tool policy withholds it."""

    render: Callable[[InboundMessage, Sequence[str]], Sequence[str]]
    order: int = MEMORY_BLOCKS


@dataclass(slots=True)
class TurnHooks:
    """See the module docstring."""

    before_turn: list[BeforeTurn] = field(default_factory=list)
    turn_material: list[TurnMaterial] = field(default_factory=list)
    slash_claims: list[SlashClaim] = field(default_factory=list)
    turn_done: list[TurnDone] = field(default_factory=list)
    session_started: list[SessionStarted] = field(default_factory=list)
    session_ended: list[SessionEnded] = field(default_factory=list)
    status_lines: list[StatusLines] = field(default_factory=list)
    pre_compress: list[PreCompress] = field(default_factory=list)
    memory_written: list[MemoryWritten] = field(default_factory=list)
    reply_media: list[ReplyMedia] = field(default_factory=list)
    prompt_blocks: list[PromptBlock] = field(default_factory=list)
    tool_guidance: dict[str, str] = field(default_factory=dict)

    async def prepare(self, start: TurnStart, item: InboxItem) -> TurnStart:
        for hook in self.before_turn:
            await hook(start, item)
        return start

    async def api_content(self, msg: InboundMessage, row: SessionRow) -> str | None:
        """The user message as sent to the model, or None when no hook added anything.

        None keeps ``api_content`` NULL: the stored text is then exactly what was sent.
        """
        extras = [extra for material in self.turn_material if (extra := await material(msg, row))]
        if not extras:
            return None
        return "\n\n".join([msg.text, *extras])

    async def claimed(self, msg: InboundMessage) -> bool:
        """Whether a feature answers ``msg``'s ``/word`` (see ``slash_claims``)."""
        for claim in self.slash_claims:
            if await claim(msg):
                return True
        return False

    async def finished(self, state: SessionState, item: InboxItem, result: TurnResult) -> None:
        for hook in self.turn_done:
            try:
                await hook(state, item, result)
            except Exception:  # the turn is committed and answered whatever a hook does
                log.exception("after-turn hook failed for inbox %s", item.id)

    async def files_for(self, item: InboxItem, reply: str) -> list[MediaRef]:
        """What the ``reply_media`` hooks send with ``reply``."""
        files: list[MediaRef] = []
        for hook in self.reply_media:
            try:
                files.extend(await hook(item, reply))
            except Exception:  # the reply goes out as text
                log.exception("reply-media hook failed for inbox %s", item.id)
        return files

    async def started(self, row: SessionRow) -> None:
        for hook in self.session_started:
            await hook(row)

    async def ended(self, session_id: str) -> None:
        for hook in self.session_ended:
            await hook(session_id)

    async def compaction_notes(self, row: SessionRow, older: Sequence[StoredMessage]) -> list[str]:
        """What the ``pre_compress`` hooks want the summary of ``older`` to keep; a failing
        hook is logged and compaction goes on without its notes."""
        notes = []
        for hook in self.pre_compress:
            try:
                note = await hook(row, older)
            except Exception:  # compaction must not fail for a hook
                log.exception("pre-compaction hook failed for session %s", row.id)
                continue
            if note and note.strip():
                notes.append(note.strip())
        return notes

    async def wrote_memory(self, write: MemoryWrite) -> None:
        """Tell the ``memory_written`` hooks; the write is on disk whatever they do."""
        for hook in self.memory_written:
            try:
                await hook(write)
            except Exception:  # the tool's answer stands
                log.exception("memory-write hook failed for session %s", write.session_id)

    async def status(self, row: SessionRow) -> list[list[str]]:
        return [await lines(row) for lines in self.status_lines]

    def blocks(self, msg: InboundMessage, tool_names: Sequence[str]) -> list[str]:
        """The volatile blocks for a new session of ``msg``'s chat, offered
        ``tool_names`` (blocking)."""
        ordered = sorted(self.prompt_blocks, key=lambda block: block.order)
        return [text for block in ordered for text in block.render(msg, tool_names) if text]
