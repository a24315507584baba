"""Turn the model's Markdown reply into Discord messages.

Discord renders Markdown itself (bold, italics, code, fenced blocks with a language,
headings, lists, quotes), so the text is sent almost untouched. Two things need care:

* **Tables.** Discord shows pipe tables as raw text, so every GitHub-style table
  outside code becomes a bulleted list, one item per data row: the first cell in
  bold, then ``Header: value`` for the other cells, joined with `` · ``
  (``- **Alice** · Age: 30 · City: Paris``). Empty cells are skipped and a
  one-column table becomes plain bullets. Code is never converted.
* **Length.** A message holds at most 2,000 characters. The reply is split, never
  truncated, and lengths are counted in UTF-16 code units so astral characters
  can never push a chunk over however Discord counts. Split points, best first:
  a blank line (or the edge of a code block) in the second half of the chunk, a
  line break in the second half, a space, any line break, and last a hard cut
  that keeps code points, and where cheap whole graphemes, together. Whitespace
  at a split point may be dropped; nothing else is. A chunk that ends inside a
  fenced code block is closed with a fence line and the next one reopens it with
  the original opening line (language tag included); those lines count toward
  the limit. Code is split only at line breaks, or hard cut when a single line
  does not fit, and its text is never otherwise altered.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate

from adapters.discord.cuts import chars_fitting, hard_cut, space_cut, u16
from adapters.discord.fences import (
    CLOSE,
    CODE,
    NO_WRAP,
    OPEN,
    TEXT,
    Fence,
    Wrap,
    classify,
)
from adapters.discord.tables import tables_to_lists

__all__ = ["MAX_MESSAGE_CHARS", "render", "tables_to_lists"]

MAX_MESSAGE_CHARS = 2000
"""Discord's maximum message length."""

_MIN_LIMIT = 8
"""Below this a chunk could not hold a reopened code block and some of its code."""

_Cursor = tuple[int, int]
"""A position in the reply: line index and character offset within that line."""
_Result = tuple[str, _Cursor]
"""A finished chunk and where the next one starts."""


def render(text: str, *, limit: int = MAX_MESSAGE_CHARS) -> list[str]:
    """The chunks to send, in order; each non-empty and at most ``limit`` long.

    Length is measured in UTF-16 code units. Raises ``ValueError`` for a limit
    too small to make progress inside a code block.
    """
    if limit < _MIN_LIMIT:
        raise ValueError(f"limit must be at least {_MIN_LIMIT}, got {limit}")
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    converted = tables_to_lists(normalized).rstrip()
    if not converted:
        return []
    doc = _Doc.parse(converted, limit)
    return [chunk for chunk in _chunks(doc) if chunk.strip()]


# --- Splitting the reply into chunks ------------------------------------------------


@dataclass
class _Doc:
    """The reply as classified lines, ready to be cut into chunks."""

    lines: list[str]
    kinds: list[int]
    wraps: list[Wrap]
    offsets: list[int]
    paragraph_ends: list[int]
    limit: int

    @classmethod
    def parse(cls, text: str, limit: int) -> _Doc:
        lines = text.split("\n")
        kinds, fences = classify(lines)
        wraps = _wraps(fences, limit)
        sizes = map(len, lines) if text.isascii() else map(u16, lines)
        # offsets[i]: units before line i, counting one per line break.
        offsets = list(accumulate(map((1).__add__, sizes), initial=0))
        return cls(lines, kinds, wraps, offsets, _paragraph_ends(lines, kinds), limit)

    def prefix(self, cursor: _Cursor) -> str:
        """The reopening fence line if a chunk starting here is inside a code block."""
        index, offset = cursor
        kind = self.kinds[index]
        inside = kind == CODE or (kind == CLOSE and offset == 0)
        return self.wraps[index].prefix if inside else ""

    def closing(self, index: int) -> Wrap:
        """How a chunk ending on line ``index`` closes its code block (``suffix``)."""
        return self.wraps[index] if self.kinds[index] in (OPEN, CODE) else NO_WRAP

    def weak(self, index: int) -> bool:
        """A split after line ``index`` would leave an empty code block behind."""
        return self.kinds[index] == OPEN or self.kinds[index + 1] == CLOSE

    def skip_blank(self, cursor: _Cursor) -> _Cursor:
        """Blank prose lines never start a chunk."""
        index, offset = cursor
        while (
            index < len(self.lines)
            and self.kinds[index] == TEXT
            and not self.lines[index][offset:].strip()
        ):
            index, offset = index + 1, 0
        return index, offset

    def cursor(self, index: int, offset: int) -> _Cursor:
        return (index + 1, 0) if offset >= len(self.lines[index]) else (index, offset)


def _wrapping(fence: Fence, limit: int) -> Wrap:
    """Reopen with the original line if the fences leave at least half the chunk for code.

    Failing that, a bare fence; failing that (absurdly long fences), no wrapping.
    """
    close = fence.char * fence.size
    for opener in (fence.line, close):
        if u16(opener) + u16(close) + 2 <= limit // 2:
            return Wrap(opener + "\n", "\n" + close, u16(close) + 1)
    return NO_WRAP


def _wraps(fences: Sequence[Fence | None], limit: int) -> list[Wrap]:
    """Each line's fence wrapping, computed once per code block."""
    by_line: dict[str, Wrap] = {}
    table: dict[Fence | None, Wrap] = {None: NO_WRAP}
    for fence in set(fences):
        if fence is not None:
            if fence.line not in by_line:
                by_line[fence.line] = _wrapping(fence, limit)
            table[fence] = by_line[fence.line]
    return list(map(table.__getitem__, fences))


def _paragraph_ends(lines: Sequence[str], kinds: Sequence[int]) -> list[int]:
    """Lines after which a split is a paragraph break, in order.

    That is the last line before a blank one, a closing fence, or the line before
    an opening fence.
    """
    blank = {i for i, line in enumerate(lines) if not line.strip() and kinds[i] == TEXT}
    ends = {i - 1 for i in blank if i - 1 not in blank}
    ends.update(i for i, kind in enumerate(kinds) if kind == CLOSE)
    ends.update(i - 1 for i, kind in enumerate(kinds) if kind == OPEN)
    return sorted(end for end in ends if 0 <= end < len(lines) - 1)


@dataclass
class _Chunk:
    """One message: lines ``first`` to ``stop - 1`` fit, the first maybe from ``offset``."""

    doc: _Doc
    first: int
    offset: int
    prefix: str
    base: int
    stop: int

    @classmethod
    def fill(cls, doc: _Doc, cursor: _Cursor) -> _Chunk:
        """Take as many whole lines from ``cursor`` as fit with the fences they need."""
        first, offset = cursor
        prefix = doc.prefix(cursor)
        width = doc.offsets[first + 1] - doc.offsets[first] - 1
        head = width if offset == 0 else u16(doc.lines[first][offset:])
        chunk = cls(doc, first, offset, prefix, u16(prefix) + head, first)
        chunk.stop = chunk.fitting_stop()
        return chunk

    def body_size(self, last: int) -> int:
        """Units of the chunk up to the end of line ``last``, without a closing fence."""
        if last < self.first:
            return u16(self.prefix)
        offsets = self.doc.offsets
        return self.base + offsets[last + 1] - offsets[self.first + 1]

    def size(self, last: int) -> int:
        """Units if the chunk ends after line ``last``, closing fence included."""
        return self.body_size(last) + self.doc.closing(last).suffix_size

    def fitting_stop(self) -> int:
        limit = self.doc.limit
        if self.size(self.first) > limit:
            return self.first
        target = limit - self.base + self.doc.offsets[self.first + 1]
        last = bisect_right(self.doc.offsets, target, lo=self.first + 1) - 2
        last = min(last, len(self.doc.lines) - 1)
        while self.size(last) > limit:
            last -= 1
        return last + 1

    def text(self, last: int, tail: list[str], suffix: str) -> str:
        """The chunk holding lines up to ``last``, then ``tail``, then ``suffix``."""
        lines = self.doc.lines
        pieces = [lines[self.first][self.offset :]] if last >= self.first else []
        pieces += lines[self.first + 1 : last + 1]
        body = self.prefix + "\n".join(pieces + tail)
        return body + suffix if suffix else body.rstrip()

    def end_after(self, last: int) -> _Result:
        return self.text(last, [], self.doc.closing(last).suffix), (last + 1, 0)

    def paragraph_cut(self, min_size: int) -> _Result | None:
        """End at the last paragraph break, if the chunk is then ``min_size`` long."""
        ends = self.doc.paragraph_ends
        position = bisect_right(ends, self.stop - 1) - 1
        if position < 0 or ends[position] < self.first:
            return None
        last = ends[position]
        return self.end_after(last) if self.size(last) >= min_size else None

    def line_cut(self, min_size: int, *, weak: bool = False) -> _Result | None:
        """End at the last line break (``weak`` ones too if asked) of at least ``min_size``."""
        for last in range(self.stop - 1, self.first - 1, -1):
            if self.size(last) < min_size:
                return None
            if weak or not self.doc.weak(last):
                return self.end_after(last)
        return None

    def cut_line(self, mode: str) -> _Result | None:
        """End inside the line that did not fit: at a space, by a hard cut, or by force."""
        index = self.stop
        kind = self.doc.kinds[index]
        if mode != "force" and kind not in ((TEXT,) if mode == "space" else (TEXT, CODE)):
            return None
        offset = self.offset if index == self.first else 0
        piece = self.doc.lines[index][offset:]
        wrap = self.doc.closing(index) if kind == CODE else NO_WRAP
        used = self.body_size(index - 1) + (0 if index == self.first else 1)
        fit = chars_fitting(piece, self.doc.limit - used - wrap.suffix_size)
        found = (space_cut if mode == "space" else hard_cut)(piece, fit, offset == 0)
        if found is None:
            return None
        end, resume = found
        chunk = self.text(index - 1, [piece[:end]], wrap.suffix)
        return chunk, self.doc.cursor(index, offset + resume)

    def split(self) -> _Result:
        """End this chunk before or inside line ``stop``: try split points best first."""
        half = self.doc.limit // 2
        strategies: list[Callable[[], _Result | None]] = [
            lambda: self.paragraph_cut(half),
            lambda: self.line_cut(half),
            lambda: self.cut_line("space"),
            lambda: self.line_cut(0),
            lambda: self.cut_line("hard"),
            lambda: self.line_cut(0, weak=True),
            lambda: self.cut_line("force"),
        ]
        for strategy in strategies:
            result = strategy()
            if result is not None:
                return result
        raise AssertionError("a chunk of at least _MIN_LIMIT units can always take something")


def _chunks(doc: _Doc) -> Iterator[str]:
    cursor = doc.skip_blank((0, 0))
    while cursor[0] < len(doc.lines):
        chunk = _Chunk.fill(doc, cursor)
        last = len(doc.lines) - 1
        text, cursor = chunk.end_after(last) if chunk.stop > last else chunk.split()
        yield text
        cursor = doc.skip_blank(cursor)
