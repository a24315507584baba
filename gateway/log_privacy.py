"""Keeping message text and secrets out of the log, whoever writes the line.

Our own code never logs a message body or a secret. Libraries do, at DEBUG: a chat
library logs each API call with its parameters (the text sent and received), HTTP
clients log request URLs (a bot token can be part of the path), model SDKs log request
options. ``install`` does two things for ``chatgate run`` and ``chatgate chat``:

- unless ``logging.log_bodies`` is true, it caps the loggers that carry bodies at INFO
  (SQLAlchemy's at WARNING): the model, HTTP and database libraries named here, and the
  ones each platform declares in its ``PlatformSpec.body_loggers`` (the gateway knows no
  platform library);
- whatever the setting, a filter on the root handlers replaces every configured secret
  (every ``SecretStr`` in the settings: bot tokens, API keys, webhook secrets) with
  ``<redacted>`` in each record that still gets through, tracebacks included.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Mapping

from pydantic import BaseModel, SecretStr

from gateway.settings import Settings

REDACTED = "<redacted>"
# Shorter "secrets" would redact ordinary words; no real token is this short.
MIN_SECRET_CHARS = 8
# Loggers of the core's libraries whose DEBUG lines can carry message text or secrets.
CORE_BODY_LOGGERS = (
    "openai",
    "anthropic",
    "httpx",
    "httpcore",
    "httpx2",
    "httpcore2",
    "aiosqlite",
    "asyncpg",
    "sqlalchemy.engine",
    "mcp",
)
# Loggers whose INFO lines already carry bodies: SQLAlchemy logs each statement and its
# parameters at INFO (it keeps its loggers at WARNING unless asked otherwise).
QUIET_AT_INFO = frozenset({"sqlalchemy.engine"})


def install(settings: Settings) -> None:
    """Cap the body loggers (unless ``logging.log_bodies``) and redact secrets."""
    redactor = SecretRedactor(configured_secrets(settings))
    for handler in logging.root.handlers:
        handler.addFilter(redactor)
    if not settings.logging.log_bodies:
        for name in body_loggers(settings):
            logger = logging.getLogger(name)
            floor = logging.WARNING if name in QUIET_AT_INFO else logging.INFO
            # Only ever raise a level: an explicit INFO would switch SQLAlchemy's echo on.
            logger.setLevel(max(floor, logger.getEffectiveLevel()))


def body_loggers(settings: Settings) -> tuple[str, ...]:
    """The core's body loggers and every platform's."""
    declared = (name for spec in settings.platforms.values() for name in spec.body_loggers)
    return (*CORE_BODY_LOGGERS, *declared)


def configured_secrets(value: object) -> frozenset[str]:
    """Every ``SecretStr`` value (of at least ``MIN_SECRET_CHARS``) inside ``value``."""
    if isinstance(value, SecretStr):
        secret = value.get_secret_value()
        return frozenset({secret}) if len(secret) >= MIN_SECRET_CHARS else frozenset()
    return frozenset().union(*(configured_secrets(child) for child in _children(value)))


def _children(value: object) -> Iterator[object]:
    if isinstance(value, BaseModel):
        yield from (getattr(value, name) for name in type(value).model_fields)
    elif isinstance(value, Mapping):
        yield from value.values()
    elif isinstance(value, list | tuple | set | frozenset):
        yield from value


class SecretRedactor(logging.Filter):
    """Replaces each of ``secrets`` in a record's message and traceback text."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        longest_first = sorted(set(secrets), key=len, reverse=True)
        self._pattern = (
            re.compile("|".join(map(re.escape, longest_first))) if longest_first else None
        )

    def filter(self, record: logging.LogRecord) -> bool:
        if self._pattern is None:
            return True
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True  # a malformed call: logging reports it, with no text of ours
        clean = self._pattern.sub(REDACTED, message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._pattern.sub(REDACTED, record.exc_text)
        if record.stack_info:
            record.stack_info = self._pattern.sub(REDACTED, record.stack_info)
        return True
