"""Threat patterns that memory content is scanned for before it reaches a system prompt.

Memory entries are injected into every future session's prompt, so a poisoned entry is a
persistent prompt injection. Each pattern has a stable id: refusals and ``[BLOCKED: <id>]``
placeholders name it so a person can tell what was caught.
"""

from __future__ import annotations

import re
from typing import NamedTuple


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


def scan(text: str) -> str | None:
    """Return the id of the first pattern (in ``THREAT_PATTERNS`` order) that ``text`` matches."""
    for pattern in THREAT_PATTERNS:
        if pattern.regex.search(text):
            return pattern.id
    return None
