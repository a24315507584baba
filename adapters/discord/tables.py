"""GitHub-style pipe tables in a Discord reply, rewritten as bulleted lists (Discord
shows pipe tables as raw text). Code is never converted."""

from __future__ import annotations

import re
from collections.abc import Sequence

from adapters.discord.fences import TEXT, classify

_PIPE = re.compile(r"(?<!\\)\|")
_DELIMITER_CELL = re.compile(r":?-+:?")
_DELIMITER_HINT = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*\|", re.MULTILINE)


def tables_to_lists(text: str) -> str:
    """Rewrite every pipe table outside code blocks as a bulleted list."""
    if _DELIMITER_HINT.search(text) is None:
        return text
    lines = text.split("\n")
    kinds, _ = classify(lines)
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


def _table_end(lines: Sequence[str], kinds: Sequence[int], index: int) -> int:
    """Index just past a table starting at ``index``, or ``index`` if none starts there."""
    if index < 0 or index + 1 >= len(lines) or kinds[index] != TEXT or kinds[index + 1] != TEXT:
        return index
    if not _is_row(lines[index]) or not _is_delimiter(lines[index + 1], lines[index]):
        return index
    end = index + 2
    while end < len(lines) and kinds[end] == TEXT and _is_row(lines[end]):
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
