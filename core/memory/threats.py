"""Threat patterns that memory content is scanned for before it reaches a system prompt.

Memory entries are injected into every future session's prompt, so a poisoned entry is a
persistent prompt injection. Each pattern has a stable id: refusals and ``[BLOCKED: <id>]``
placeholders name it so a person can tell what was caught.

Patterns are matched against the text as written and against its scan form: NFKC, with
format characters (zero-width joiners, soft hyphens) removed and non-Latin look-alike
letters folded to their Latin prototype with the Unicode TR39 confusables table. Latin
text is not a source in that table, so the patterns keep their meaning, while
"іgnоrе" in Cyrillic letters or fullwidth "ｉｇｎｏｒｅ" reads as "ignore". Ordinary
Russian or Greek text folds to Latin-looking gibberish, which no pattern matches. The
scan form is only for matching: callers store the text as it was written.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

from disarm import normalize_confusables


class ThreatPattern(NamedTuple):
    id: str
    regex: re.Pattern[str]


def _pattern(pattern_id: str, source: str) -> ThreatPattern:
    return ThreatPattern(pattern_id, re.compile(source, re.IGNORECASE))


_EARLIER = r"(?:the\s+)?(?:previous|prior|above|earlier|preceding)\s+"

THREAT_PATTERNS: tuple[ThreatPattern, ...] = (
    _pattern(
        "prompt_injection",
        rf"\bignore\s+(?:(?:all|any)\s+(?:{_EARLIER})?|{_EARLIER})instructions\b",
    ),
    _pattern("role_hijack", r"\byou\s+are\s+now\b"),
    _pattern("deception_hide", r"\b(?:do\s+not|don'?t|never)\s+tell\s+the\s+user\b"),
    _pattern("exfil_curl", r"\bcurl\b[^\n]*\$\{?\w*(?:KEY|TOKEN|SECRET)"),
    _pattern("exfil_wget", r"\bwget\b[^\n]*\$\{?\w*(?:KEY|TOKEN|SECRET)"),
    _pattern(
        "read_secrets",
        r"\b(?:cat|less|more|head|tail|source|grep|strings)\b[^\n]*"
        r"(?:\.env\b|credentials|\.netrc\b)",
    ),
    _pattern("ssh_backdoor", r"authorized_keys"),
    _pattern("invisible_unicode", "[\u200b-\u200d\u2060\ufeff]"),
    _pattern("bidi_unicode", "[\u202a-\u202e\u2066-\u2069]"),
)


def scan_form(text: str) -> str:
    """``text`` as the scan reads it: NFKC, no format characters, Latin look-alikes folded."""
    visible = "".join(char for char in text if unicodedata.category(char) != "Cf")
    folded = normalize_confusables(unicodedata.normalize("NFKC", visible), target_script="latin")
    return unicodedata.normalize("NFKC", folded)


def scan(text: str) -> str | None:
    """Return the id of the first pattern (in ``THREAT_PATTERNS`` order) that ``text`` matches.

    A pattern matches when it is found in ``text`` itself or in its ``scan_form``.
    """
    forms = (text, scan_form(text))
    for pattern in THREAT_PATTERNS:
        if any(pattern.regex.search(form) for form in forms):
            return pattern.id
    return None


def scan_all(text: str) -> list[str]:
    """The id of every pattern ``text`` matches (as ``scan`` matches), in pattern order."""
    forms = (text, scan_form(text))
    return [p.id for p in THREAT_PATTERNS if any(p.regex.search(form) for form in forms)]
