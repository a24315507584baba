"""Measuring a line in UTF-16 units and cutting it where nothing breaks: not inside a
grapheme, and never forging a code fence on either side of the cut."""

from __future__ import annotations

import re
import unicodedata

from adapters.discord.fences import FENCE, FENCE_START

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_ZWJ = "\u200d"
_MAX_BACKTRACK = 32
"""How far a hard cut backs off to keep a grapheme whole or avoid forging a fence."""
_JOINING_CATEGORIES = frozenset({"Mn", "Mc", "Me"})


def u16(text: str) -> int:
    """Length in UTF-16 code units, which is what Discord's limit may be counted in."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2


def chars_fitting(text: str, room: int) -> int:
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
    if FENCE_START.match(piece, resume):
        return False
    return not (whole_line and FENCE.fullmatch(piece, 0, end))


def space_cut(piece: str, fit: int, whole_line: bool) -> tuple[int, int] | None:
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


def hard_cut(piece: str, fit: int, whole_line: bool) -> tuple[int, int] | None:
    """The latest cut within ``fit`` that splits no grapheme and forges no fence."""
    for end in range(fit, max(0, fit - _MAX_BACKTRACK), -1):
        if not _inside_grapheme(piece, end) and _clean_cut(piece, end, end, whole_line):
            return end, end
    return (fit, fit) if fit > 0 else None
