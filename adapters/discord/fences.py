"""Fenced code blocks in a Discord reply: which lines are code, and how a chunk that
ends inside a block closes it and the next one reopens it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# What a line is: prose, a fence opening a code block, a line of code, a closing fence.
TEXT, OPEN, CODE, CLOSE = range(4)

FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
FENCE_START = re.compile(r" {0,3}(?:```|~~~)")


@dataclass(frozen=True, eq=False)
class Fence:
    """The opening fence of a code block (compared by identity: one per block)."""

    char: str
    size: int
    line: str


@dataclass(frozen=True)
class Wrap:
    """What a chunk starting inside a block starts with, and one ending inside it ends with."""

    prefix: str
    suffix: str
    suffix_size: int


NO_WRAP = Wrap("", "", 0)
"""For prose, and for blocks whose fences would not leave room for their code."""


def _opening_fence(line: str) -> Fence | None:
    match = FENCE.fullmatch(line)
    if match is None:
        return None
    run, info = match.group(1), match.group(2)
    if run[0] == "`" and "`" in info:
        return None
    return Fence(run[0], len(run), line.rstrip())


def _closes(fence: Fence, line: str) -> bool:
    match = FENCE.fullmatch(line)
    if match is None or match.group(2).strip():
        return False
    run = match.group(1)
    return run[0] == fence.char and len(run) >= fence.size


def classify(lines: Sequence[str]) -> tuple[list[int], list[Fence | None]]:
    """Each line's kind, and for lines of a code block the block's opening fence.

    Only lines that look like fences are inspected one by one; the lines between
    them are filled in by slice, so long replies cost little per line.
    """
    kinds = [TEXT] * len(lines)
    fences: list[Fence | None] = [None] * len(lines)
    candidates = [
        index
        for index, line in enumerate(lines)
        if ("```" in line or "~~~" in line) and FENCE.fullmatch(line)
    ]
    fence: Fence | None = None
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
    kinds: list[int], fences: list[Fence | None], fence: Fence, opened: int, closed: int
) -> None:
    """Record a block from its opening line to its closing line (``len`` if unclosed)."""
    kinds[opened] = OPEN
    kinds[opened + 1 : closed] = [CODE] * (closed - opened - 1)
    if closed < len(kinds):
        kinds[closed] = CLOSE
    end = min(closed + 1, len(kinds))
    fences[opened:end] = [fence] * (end - opened)
