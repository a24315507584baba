"""Turn the model's Markdown into Telegram messages that render correctly.

Telegram takes plain text plus ``MessageEntity`` spans measured in UTF-16 code units,
and at most 4,096 of those units per message. Hand-escaping MarkdownV2 breaks on
the first stray ``_`` and splitting escaped text cuts entities in half, so we let
``telegramify_markdown`` do the conversion and split the *converted* text
ourselves, on whitespace that no entity straddles. Only a single entity longer
than a message (a huge code block or quote) is ever cut, and then each part gets
its own copy of the entity, so every message is valid and closed on its own.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import telegram
import telegramify_markdown

logger = logging.getLogger(__name__)

TELEGRAM_LIMIT = 4096
"""Telegram's maximum message length, in UTF-16 code units."""

# Formatting that still means the same thing when cut in two: each part keeps it.
# Everything else (links, mentions, custom emoji...) must never be cut, because a
# clipped link would point its URL at half of its text.
_CLIPPABLE = frozenset(
    {
        "bold",
        "italic",
        "underline",
        "strikethrough",
        "spoiler",
        "code",
        "pre",
        "blockquote",
        "expandable_blockquote",
    }
)

# Split-point kinds, best first: between paragraphs, between lines, between words.
_BLANK, _NEWLINE, _SPACE = 0, 1, 2
# How badly a split point cuts entities, best first.
_FREE, _CLIPS, _BREAKS = 0, 1, 2

_WHITESPACE = re.compile(r"[ \t\r\n]+")
_ZWJ = "\u200d"


@dataclass(frozen=True)
class Chunk:
    """One Telegram message: pass as ``send_message(chat_id, text, entities=[...])``."""

    text: str
    entities: tuple[telegram.MessageEntity, ...] = ()


@dataclass(frozen=True)
class _Span:
    """An entity with Python string indices, so slicing the text is trivial."""

    start: int
    end: int
    type: str
    url: str | None
    language: str | None
    custom_emoji_id: str | None


@dataclass(frozen=True)
class _Cut:
    """A split point: the chunk ends at ``end``, the next starts at ``resume``.

    The whitespace between them is dropped; ``resume`` sits just after the last
    newline so the next line's indentation (code!) survives.
    """

    end: int
    resume: int
    kind: int


def render(markdown: str, *, limit: int = TELEGRAM_LIMIT) -> list[Chunk]:
    """Convert Markdown to Telegram chunks, each at most ``limit`` UTF-16 units.

    Never raises on odd input: if the converter fails, the raw Markdown is sent
    as plain text, which is better than no reply at all.
    """
    _check_limit(limit)
    try:
        text, entities = telegramify_markdown.convert(markdown)
        spans = _to_spans(text, entities)
    except Exception:
        logger.warning("markdown conversion failed; sending the reply as plain text", exc_info=True)
        text, spans = markdown, []
    return _split(text, spans, limit)


def plain(markdown: str, *, limit: int = TELEGRAM_LIMIT) -> list[str]:
    """The same chunks as ``render`` without entities, for when formatting is rejected."""
    return [chunk.text for chunk in render(markdown, limit=limit)]


def plain_chunk(chunk: Chunk) -> Chunk:
    """Drop one chunk's entities so it can be resent after Telegram rejects them."""
    return Chunk(text=chunk.text, entities=())


def _check_limit(limit: int) -> None:
    """A limit below 2 could not hold one emoji, so splitting could never finish."""
    if limit < 2:
        raise ValueError(f"limit must be at least 2 UTF-16 units, got {limit}")


def _utf16_prefix(text: str) -> list[int]:
    """``prefix[i]`` is the UTF-16 offset of ``text[i]``; ``prefix[len(text)]`` the total."""
    widths = (2 if ord(char) > 0xFFFF else 1 for char in text)
    return list(itertools.accumulate(widths, initial=0))


def _to_spans(text: str, entities: Sequence[telegramify_markdown.MessageEntity]) -> list[_Span]:
    """Map UTF-16 entity offsets to string indices, clamped to the text."""
    prefix = _utf16_prefix(text)
    spans = []
    for entity in entities:
        start = min(bisect.bisect_left(prefix, entity.offset), len(text))
        end = min(bisect.bisect_left(prefix, entity.offset + entity.length), len(text))
        if start < end:
            spans.append(
                _Span(
                    start,
                    end,
                    entity.type,
                    entity.url,
                    entity.language,
                    entity.custom_emoji_id,
                )
            )
    return sorted(spans, key=lambda span: (span.start, -span.end))


def _split(text: str, spans: list[_Span], limit: int) -> list[Chunk]:
    """Greedily fill chunks up to ``limit``, ending each at the best split point."""
    prefix = _utf16_prefix(text)
    harm = _harm_by_boundary(len(text), spans)
    cuts = _whitespace_cuts(text)
    chunks = []
    start = 0
    while start < len(text):
        cut = _next_cut(text, cuts, harm, prefix, start, limit)
        chunk = _make_chunk(text, spans, prefix, start, cut.end)
        if chunk is not None:
            chunks.append(chunk)
        start = cut.resume
    return chunks


def _next_cut(
    text: str, cuts: list[_Cut], harm: list[int], prefix: list[int], start: int, limit: int
) -> _Cut:
    """Where the chunk starting at ``start`` ends: the rest, a split point, or mid-word."""
    if prefix[-1] - prefix[start] <= limit:
        return _Cut(len(text), len(text), _SPACE)
    last = bisect.bisect_right(prefix, prefix[start] + limit) - 1
    first = bisect.bisect_right(cuts, start, key=_cut_end)
    window = cuts[first : bisect.bisect_right(cuts, last, key=_cut_end)]
    return _best_cut(window, harm, prefix, start, limit) or _hard_cut(text, start, last)


def _cut_end(cut: _Cut) -> int:
    """Sort key for bisecting the split points by where they end a chunk."""
    return cut.end


def _harm_by_boundary(size: int, spans: list[_Span]) -> list[int]:
    """For each boundary ``k`` (between ``text[k-1]`` and ``text[k]``), how badly
    ending a chunk there would cut the entities that continue across it."""
    clips = [0] * (size + 2)
    breaks = [0] * (size + 2)
    for span in spans:
        counts = clips if span.type in _CLIPPABLE else breaks
        counts[span.start + 1] += 1
        counts[span.end] -= 1
    harm = []
    open_clips = open_breaks = 0
    for boundary in range(size + 1):
        open_clips += clips[boundary]
        open_breaks += breaks[boundary]
        harm.append(_BREAKS if open_breaks else _CLIPS if open_clips else _FREE)
    return harm


def _whitespace_cuts(text: str) -> list[_Cut]:
    """Every whitespace run is a candidate split point, ranked by what it separates."""
    cuts = []
    for match in _WHITESPACE.finditer(text):
        run = match.group()
        newlines = run.count("\n")
        if newlines:
            resume = match.start() + run.rfind("\n") + 1
            kind = _BLANK if newlines > 1 else _NEWLINE
        else:
            resume, kind = match.end(), _SPACE
        cuts.append(_Cut(match.start(), resume, kind))
    return cuts


def _best_cut(
    window: list[_Cut], harm: list[int], prefix: list[int], start: int, limit: int
) -> _Cut | None:
    """Pick the split point that harms the fewest entities, then the best kind.

    Among entity-free points a paragraph break is only preferred while it still
    fills half a message, so one early blank line doesn't make a tiny chunk. Inside
    a too-long entity, a newline always beats a space so code is cut between lines.
    """
    if not window:
        return None

    def rank(cut: _Cut) -> tuple[int, bool, int, int]:
        level = harm[cut.end]
        short = level == _FREE and prefix[cut.end] - prefix[start] < limit // 2
        return (level, short, cut.kind, -cut.end)

    return min(window, key=rank)


def _hard_cut(text: str, start: int, last: int) -> _Cut:
    """No whitespace fits: cut mid-word, but not inside an emoji sequence if avoidable."""
    end = last
    while end > start + 1 and _joined(text, end):
        end -= 1
    if end == start + 1 and _joined(text, end):
        end = last
    return _Cut(end, end, _SPACE)


def _joined(text: str, index: int) -> bool:
    """True when ``text[index]`` visually belongs to the character before it."""
    before, char = text[index - 1], text[index]
    return (
        before == _ZWJ
        or char == _ZWJ
        or char in "\ufe0e\ufe0f"
        or 0x1F3FB <= ord(char) <= 0x1F3FF
        or unicodedata.combining(char) != 0
    )


def _make_chunk(
    text: str, spans: list[_Span], prefix: list[int], start: int, end: int
) -> Chunk | None:
    """Slice ``[start, end)`` and clip entities to it, rebased in UTF-16 units.

    Whitespace-only chunks and entities are dropped: Telegram rejects empty text.
    """
    piece = text[start:end]
    if not piece.strip():
        return None
    entities = []
    for span in spans:
        lo, hi = max(span.start, start), min(span.end, end)
        if lo < hi and text[lo:hi].strip():
            entities.append(
                telegram.MessageEntity(
                    type=span.type,
                    offset=prefix[lo] - prefix[start],
                    length=prefix[hi] - prefix[lo],
                    url=span.url,
                    language=span.language,
                    custom_emoji_id=span.custom_emoji_id,
                )
            )
    return Chunk(text=piece, entities=tuple(entities))
