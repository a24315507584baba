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

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate

MAX_MESSAGE_CHARS = 2000
"""Discord's maximum message length."""

_MIN_LIMIT = 8
"""Below this a chunk could not hold a reopened code block and some of its code."""

# What a line is: prose, a fence opening a code block, a line of code, a closing fence.
_TEXT, _OPEN, _CODE, _CLOSE = range(4)

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_START = re.compile(r" {0,3}(?:```|~~~)")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_PIPE = re.compile(r"(?<!\\)\|")
_DELIMITER_CELL = re.compile(r":?-+:?")
_DELIMITER_HINT = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*\|", re.MULTILINE)
_ZWJ = "\u200d"
_MAX_BACKTRACK = 32
"""How far a hard cut backs off to keep a grapheme whole or avoid forging a fence."""
_JOINING_CATEGORIES = frozenset({"Mn", "Mc", "Me"})

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


def tables_to_lists(text: str) -> str:
    """Rewrite every pipe table outside code blocks as a bulleted list."""
    if _DELIMITER_HINT.search(text) is None:
        return text
    lines = text.split("\n")
    kinds, _ = _classify(lines)
    out: list[str] = []
    done = 0
    for index in (i for i, line in enumerate(lines) if "-" in line and "|" in line):
        header = index - 1
        if header < done:
            continue
        end = _table_end(lines, kinds, header)
        if end > header:
            out.extend(lines[done:header])
            out.extend(_table_as_list(lines[header:end]))
            done = end
    out.extend(lines[done:])
    return "\n".join(out)


# --- Code fences -------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Fence:
    """The opening fence of a code block (compared by identity: one per block)."""

    char: str
    size: int
    line: str


@dataclass(frozen=True)
class _Wrap:
    """What a chunk starting inside a block starts with, and one ending inside it ends with."""

    prefix: str
    suffix: str
    suffix_size: int


_NO_WRAP = _Wrap("", "", 0)
"""For prose, and for blocks whose fences would not leave room for their code."""


def _opening_fence(line: str) -> _Fence | None:
    match = _FENCE.fullmatch(line)
    if match is None:
        return None
    run, info = match.group(1), match.group(2)
    if run[0] == "`" and "`" in info:
        return None
    return _Fence(run[0], len(run), line.rstrip())


def _closes(fence: _Fence, line: str) -> bool:
    match = _FENCE.fullmatch(line)
    if match is None or match.group(2).strip():
        return False
    run = match.group(1)
    return run[0] == fence.char and len(run) >= fence.size


def _classify(lines: Sequence[str]) -> tuple[list[int], list[_Fence | None]]:
    """Each line's kind, and for lines of a code block the block's opening fence.

    Only lines that look like fences are inspected one by one; the lines between
    them are filled in by slice, so long replies cost little per line.
    """
    kinds = [_TEXT] * len(lines)
    fences: list[_Fence | None] = [None] * len(lines)
    candidates = [
        index
        for index, line in enumerate(lines)
        if ("```" in line or "~~~" in line) and _FENCE.fullmatch(line)
    ]
    fence: _Fence | None = None
    opened = 0
    for index in candidates:
        if fence is None:
            fence = _opening_fence(lines[index])
            opened = index
        elif _closes(fence, lines[index]):
            _mark_block(kinds, fences, fence, opened, index)
            fence = None
    if fence is not None:
        _mark_block(kinds, fences, fence, opened, len(lines))
    return kinds, fences


def _mark_block(
    kinds: list[int], fences: list[_Fence | None], fence: _Fence, opened: int, closed: int
) -> None:
    """Record a block from its opening line to its closing line (``len`` if unclosed)."""
    kinds[opened] = _OPEN
    kinds[opened + 1 : closed] = [_CODE] * (closed - opened - 1)
    if closed < len(kinds):
        kinds[closed] = _CLOSE
    end = min(closed + 1, len(kinds))
    fences[opened:end] = [fence] * (end - opened)


def _wrapping(fence: _Fence, limit: int) -> _Wrap:
    """Reopen with the original line if the fences leave at least half the chunk for code.

    Failing that, a bare fence; failing that (absurdly long fences), no wrapping.
    """
    close = fence.char * fence.size
    for opener in (fence.line, close):
        if _u16(opener) + _u16(close) + 2 <= limit // 2:
            return _Wrap(opener + "\n", "\n" + close, _u16(close) + 1)
    return _NO_WRAP


# --- Tables ------------------------------------------------------------------------


def _table_end(lines: Sequence[str], kinds: Sequence[int], index: int) -> int:
    """Index just past a table starting at ``index``, or ``index`` if none starts there."""
    if index < 0 or index + 1 >= len(lines) or kinds[index] != _TEXT or kinds[index + 1] != _TEXT:
        return index
    if not _is_row(lines[index]) or not _is_delimiter(lines[index + 1], lines[index]):
        return index
    end = index + 2
    while end < len(lines) and kinds[end] == _TEXT and _is_row(lines[end]):
        end += 1
    return end


def _is_row(line: str) -> bool:
    return _indent(line) < 4 and bool(line.strip()) and _PIPE.search(line) is not None


def _is_delimiter(line: str, header: str) -> bool:
    if not _is_row(line) or "-" not in line:
        return False
    cells = _cells(line)
    if len(cells) != len(_cells(header)):
        return False
    return all(_DELIMITER_CELL.fullmatch(cell) for cell in cells)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _cells(line: str) -> list[str]:
    """Split a row on unescaped pipes; outer pipes are optional, ``\\|`` becomes ``|``."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [cell.strip().replace("\\|", "|") for cell in _PIPE.split(body)]


def _table_as_list(lines: Sequence[str]) -> list[str]:
    headers = _cells(lines[0])
    rows = [_cells(line) for line in lines[2:]]
    if not rows:
        names = [name for name in headers if name]
        return ["- " + " · ".join(names)] if names else []
    items = (_row_item(headers, row) for row in rows)
    return [item for item in items if item]


def _row_item(headers: Sequence[str], cells: Sequence[str]) -> str:
    """``- **first** · Header: value · ...``; cells beyond the header row keep no label."""
    title, rest = cells[0], cells[1:]
    parts = [_bold(title) if len(headers) > 1 else title] if title else []
    labels = [*headers[1:], *[""] * len(rest)][: len(rest)]
    pairs = zip(labels, rest, strict=True)
    parts += [f"{label}: {value}" if label else value for label, value in pairs if value]
    return "- " + " · ".join(parts) if parts else ""


def _bold(text: str) -> str:
    if len(text) > 4 and text.startswith("**") and text.endswith("**"):
        return text
    return f"**{text}**"


# --- Measuring and cutting single lines -------------------------------------------


def _u16(text: str) -> int:
    """Length in UTF-16 code units, which is what Discord's limit may be counted in."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2


def _fit(text: str, room: int) -> int:
    """How many leading characters of ``text`` fit in ``room`` UTF-16 units."""
    if room <= 0:
        return 0
    head = text[:room]
    if _ASTRAL.search(head) is None:
        return len(head)
    total = 0
    for index, char in enumerate(head):
        total += 2 if ord(char) > 0xFFFF else 1
        if total > room:
            return index
    return len(head)


def _inside_grapheme(text: str, index: int) -> bool:
    """Whether cutting before ``text[index]`` would split an obvious grapheme cluster."""
    if index <= 0 or index >= len(text):
        return False
    before, after = text[index - 1], text[index]
    if _ZWJ in (before, after):
        return True
    code = ord(after)
    if 0x1F3FB <= code <= 0x1F3FF or 0xE0020 <= code <= 0xE007F:  # skin tones, flag tags
        return True
    return unicodedata.category(after) in _JOINING_CATEGORIES  # combining marks, selectors


def _clean_cut(piece: str, end: int, resume: int, whole_line: bool) -> bool:
    """A cut must not turn either half into a fence line that was not there before."""
    if _FENCE_START.match(piece, resume):
        return False
    return not (whole_line and _FENCE.fullmatch(piece, 0, end))


def _space_cut(piece: str, fit: int, whole_line: bool) -> tuple[int, int] | None:
    """The last run of spaces within the first ``fit`` characters: (end, resume)."""
    bound = fit + 1
    while bound > 0:
        space = max(piece.rfind(" ", 0, bound), piece.rfind("\t", 0, bound))
        if space <= 0:
            return None
        end = len(piece[:space].rstrip(" \t"))
        resume = len(piece) - len(piece[space:].lstrip(" \t"))
        if end > 0 and _clean_cut(piece, end, resume, whole_line):
            return end, resume
        bound = end
    return None


def _hard_cut(piece: str, fit: int, whole_line: bool) -> tuple[int, int] | None:
    """The latest cut within ``fit`` that splits no grapheme and forges no fence."""
    for end in range(fit, max(0, fit - _MAX_BACKTRACK), -1):
        if not _inside_grapheme(piece, end) and _clean_cut(piece, end, end, whole_line):
            return end, end
    return (fit, fit) if fit > 0 else None


# --- Splitting the reply into chunks ------------------------------------------------


@dataclass
class _Doc:
    """The reply as classified lines, ready to be cut into chunks."""

    lines: list[str]
    kinds: list[int]
    wraps: list[_Wrap]
    offsets: list[int]
    paragraph_ends: list[int]
    limit: int

    @classmethod
    def parse(cls, text: str, limit: int) -> _Doc:
        lines = text.split("\n")
        kinds, fences = _classify(lines)
        wraps = _wraps(fences, limit)
        sizes = map(len, lines) if text.isascii() else map(_u16, lines)
        # offsets[i]: units before line i, counting one per line break.
        offsets = list(accumulate(map((1).__add__, sizes), initial=0))
        return cls(lines, kinds, wraps, offsets, _paragraph_ends(lines, kinds), limit)

    def prefix(self, cursor: _Cursor) -> str:
        """The reopening fence line if a chunk starting here is inside a code block."""
        index, offset = cursor
        kind = self.kinds[index]
        inside = kind == _CODE or (kind == _CLOSE and offset == 0)
        return self.wraps[index].prefix if inside else ""

    def closing(self, index: int) -> _Wrap:
        """How a chunk ending on line ``index`` closes its code block (``suffix``)."""
        return self.wraps[index] if self.kinds[index] in (_OPEN, _CODE) else _NO_WRAP

    def weak(self, index: int) -> bool:
        """A split after line ``index`` would leave an empty code block behind."""
        return self.kinds[index] == _OPEN or self.kinds[index + 1] == _CLOSE

    def skip_blank(self, cursor: _Cursor) -> _Cursor:
        """Blank prose lines never start a chunk."""
        index, offset = cursor
        while (
            index < len(self.lines)
            and self.kinds[index] == _TEXT
            and not self.lines[index][offset:].strip()
        ):
            index, offset = index + 1, 0
        return index, offset

    def cursor(self, index: int, offset: int) -> _Cursor:
        return (index + 1, 0) if offset >= len(self.lines[index]) else (index, offset)


def _wraps(fences: Sequence[_Fence | None], limit: int) -> list[_Wrap]:
    """Each line's fence wrapping, computed once per code block."""
    by_line: dict[str, _Wrap] = {}
    table: dict[_Fence | None, _Wrap] = {None: _NO_WRAP}
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
    blank = {i for i, line in enumerate(lines) if not line.strip() and kinds[i] == _TEXT}
    ends = {i - 1 for i in blank if i - 1 not in blank}
    ends.update(i for i, kind in enumerate(kinds) if kind == _CLOSE)
    ends.update(i - 1 for i, kind in enumerate(kinds) if kind == _OPEN)
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
        head = width if offset == 0 else _u16(doc.lines[first][offset:])
        chunk = cls(doc, first, offset, prefix, _u16(prefix) + head, first)
        chunk.stop = chunk.fitting_stop()
        return chunk

    def body_size(self, last: int) -> int:
        """Units of the chunk up to the end of line ``last``, without a closing fence."""
        if last < self.first:
            return _u16(self.prefix)
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
        if mode != "force" and kind not in ((_TEXT,) if mode == "space" else (_TEXT, _CODE)):
            return None
        offset = self.offset if index == self.first else 0
        piece = self.doc.lines[index][offset:]
        wrap = self.doc.closing(index) if kind == _CODE else _NO_WRAP
        used = self.body_size(index - 1) + (0 if index == self.first else 1)
        fit = _fit(piece, self.doc.limit - used - wrap.suffix_size)
        found = (_space_cut if mode == "space" else _hard_cut)(piece, fit, offset == 0)
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
