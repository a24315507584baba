"""Turn free user text into a full-text query that cannot be a syntax error.

The parse keeps what a person means by quotes, hyphens and a trailing ``*`` and drops
everything else that FTS5 (or a PostgreSQL tsquery) would read as syntax. Every term is
emitted as a quoted string, so words like ``AND`` or ``NEAR`` can never be operators.
"""

from __future__ import annotations

import re

from core.record import record

MAX_QUERY_CHARS = 2048
MIN_PREFIX_CHARS = 3

# A word, or words joined by hyphens or dots ("foo-bar", "v1.2"), optionally starred.
_RUN = re.compile(r"\w+(?:[-.]\w+)*(\*)?")
_WORD = re.compile(r"\w+")
_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})
_CJK = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff]"
)


@record
class Term:
    """One AND-ed term: a word, a hyphen/dot compound or a quoted phrase."""

    text: str
    phrase: bool = False
    prefix: bool = False


def parse_query(text: str) -> tuple[Term, ...]:
    """The searchable terms of ``text`` (capped at 2,048 characters), in order."""
    text = text[:MAX_QUERY_CHARS]
    pieces = text.split('"')
    # Odd pieces sit between a pair of quotes; a last unpaired quote is just dropped.
    paired = len(pieces) if len(pieces) % 2 else len(pieces) - 1
    terms: list[Term] = []
    for index, piece in enumerate(pieces):
        if index % 2 and index < paired:
            terms.extend(_phrase(piece))
        else:
            terms.extend(_loose_terms(piece))
    return tuple(terms)


def sanitize_fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression for ``text``, or None when nothing searchable remains."""
    terms = parse_query(text)
    if not terms:
        return None
    return " ".join(fts5_term(term) for term in terms)


def fts5_term(term: Term) -> str:
    """``term`` as an FTS5 string (quotes doubled), starred when it is a prefix."""
    quoted = '"' + term.text.replace('"', '""') + '"'
    return quoted + "*" if term.prefix else quoted


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds CJK characters, which the word tokenizer cannot split."""
    return _CJK.search(text) is not None


def _phrase(piece: str) -> list[Term]:
    words = [word for word in _WORD.findall(piece) if _searchable(word)]
    if not words:
        return []
    if len(words) == 1:
        return [Term(words[0])]
    return [Term(" ".join(words), phrase=True)]


def _loose_terms(piece: str) -> list[Term]:
    terms: list[Term] = []
    for match in _RUN.finditer(piece):
        run = match.group(0).rstrip("*")
        if run in _OPERATORS or not _searchable(run):
            continue
        compound = "-" in run or "." in run
        starred = match.group(1) is not None
        prefix = starred and not compound and len(run) >= MIN_PREFIX_CHARS
        terms.append(Term(run, phrase=compound, prefix=prefix))
    return terms


def _searchable(word: str) -> bool:
    # Underscores alone are separators to the tokenizer: the term would be empty.
    return any(char.isalnum() for char in word)
