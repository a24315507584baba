"""``WireCache``: each message's request form, encoded once, kept beside the transcript.

A session's request prefix is byte-identical turn to turn by design (the system prompt
is frozen, history only grows), so a message's JSON never has to be encoded twice. The
cache keeps, per provider dialect, the transcript's messages (by identity: a
``ChatMessage`` is immutable) and the bytes each became; a request walks the messages
it sends, reuses the bytes of every message the cache already holds at that position,
and encodes only from the first one it does not (the new turn's messages, or every
message after a compaction, an edit or ``/new``, which give new objects). The body is
then assembled by concatenation (``core.models.openai_wire``, ``anthropic_wire``).

A user message with images is encoded afresh each time (its base64 is large and its
form depends on the media store) and never kept. One cache belongs to one session and
lives on its ``SessionState``; ``nbytes`` is what it holds, for a cache bounded by size.
Encoding is synchronous, so two tasks of one session (a turn and its background review)
never see it half-updated.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from core.models.base import ChatMessage, ToolSpec

# ``encode(message)``: its bytes, and whether they may be kept (false: images).
Encoder = Callable[[ChatMessage], tuple[bytes, bool]]
# Bytes a kept entry costs beyond its payload (list slots, the bytes object's header).
_ENTRY_OVERHEAD = 56


def dumps(value: Any) -> bytes:
    """Arbitrary JSON (tool schemas, tool inputs) exactly as the SDKs encoded it.

    The standard library's encoder with the SDKs' settings: orjson writes some floats
    differently (``1e-7`` for ``1e-07``), and these bytes must match what was sent before.
    """
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def dumps_text(value: str | None) -> bytes:
    """A JSON string (or null): orjson, the same bytes as the SDKs' encoder for strings."""
    data: bytes = orjson.dumps(value)
    return data


class _Dialect:
    """One dialect's kept messages and their bytes, position for position."""

    __slots__ = ("messages", "nbytes", "parts", "tools", "tools_bytes", "unkept")

    def __init__(self) -> None:
        self.messages: list[ChatMessage] = []
        self.parts: list[bytes | None] = []
        self.unkept: list[int] = []  # positions whose bytes are not kept (images)
        self.nbytes = 0
        self.tools: tuple[ToolSpec, ...] = ()
        self.tools_bytes = b""

    def truncate(self, keep: int) -> None:
        for part in self.parts[keep:]:
            self.nbytes -= _weight(part)
        del self.messages[keep:], self.parts[keep:]
        self.unkept = [i for i in self.unkept if i < keep]


def _weight(part: bytes | None) -> int:
    return _ENTRY_OVERHEAD + (len(part) if part is not None else 0)


class WireCache:
    """See the module docstring."""

    __slots__ = ("_dialects",)

    def __init__(self) -> None:
        self._dialects: dict[str, _Dialect] = {}

    @property
    def nbytes(self) -> int:
        """Bytes held: the encoded messages and tool lists, with a per-entry overhead."""
        return sum(d.nbytes + len(d.tools_bytes) for d in self._dialects.values())

    def clear(self) -> None:
        self._dialects.clear()

    def parts(self, dialect: str, messages: Sequence[ChatMessage], encode: Encoder) -> list[bytes]:
        """The bytes of each of ``messages`` in ``dialect``, encoding only what is new."""
        kept = self._dialects.setdefault(dialect, _Dialect())
        same = _common_prefix(kept.messages, messages)
        if same < len(kept.messages):
            kept.truncate(same)
        fresh: dict[int, bytes] = {}
        for i in range(same, len(messages)):
            data, keep = encode(messages[i])
            part = data if keep else None
            if part is None:
                fresh[i] = data
                kept.unkept.append(i)
            kept.messages.append(messages[i])
            kept.parts.append(part)
            kept.nbytes += _weight(part)
        out = kept.parts.copy()
        for i in kept.unkept:  # images: encoded for this request only
            out[i] = fresh[i] if i in fresh else encode(messages[i])[0]
        return out  # type: ignore[return-value]  # every None was replaced

    def tools(
        self, dialect: str, specs: Sequence[ToolSpec], encode: Callable[[Sequence[ToolSpec]], bytes]
    ) -> bytes:
        """The encoded tool list, kept while the session offers the same specs."""
        kept = self._dialects.setdefault(dialect, _Dialect())
        frozen = tuple(specs)
        if frozen != kept.tools:  # the same objects, or equal ones: no encoding
            kept.tools, kept.tools_bytes = frozen, encode(frozen)
        return kept.tools_bytes


def _common_prefix(kept: Sequence[ChatMessage], messages: Sequence[ChatMessage]) -> int:
    """How many leading messages are the very same objects in both."""
    n = min(len(kept), len(messages))
    if all(map(operator.is_, kept[:n], messages[:n])):  # the usual case, checked in C
        return n
    for i in range(n):
        if kept[i] is not messages[i]:
            return i
    return n
