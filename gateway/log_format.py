"""How log lines look: ``logging.format`` is ``text`` (one line for people) or ``json``
(one JSON object a line, for a log pipeline), and every line carries the turn id.

The turn id (``core.turn_context``: the inbox id of the message being worked on) ties
together a message's inbound line, its model calls, its tools and its delivery. A
filter on the root handlers adds it to each record; the JSON formatter writes ``ts``
(UTC, ISO 8601), ``level``, ``logger``, ``msg``, ``turn_id`` and, when there is one,
``exc`` (the traceback text). ``gateway.log_privacy`` keeps its redaction filter on the
same handlers, and it runs first: what either format writes is already redacted.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Literal

from core.turn_context import current

LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s:%(turn_tag)s %(message)s"


class TurnIdFilter(logging.Filter):
    """Adds ``turn_id`` (None outside a turn) and ``turn_tag`` (`` [turn N]`` or empty)."""

    def filter(self, record: logging.LogRecord) -> bool:
        turn = current()
        record.turn_id = turn
        record.turn_tag = f" [turn {turn}]" if turn is not None else ""
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
            "turn_id": getattr(record, "turn_id", None),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exc"] = record.exc_text
        if record.stack_info:
            entry["stack"] = record.stack_info
        return json.dumps(entry, ensure_ascii=False)


def formatter(kind: LogFormat) -> logging.Formatter:
    return JsonFormatter() if kind == "json" else logging.Formatter(TEXT_FORMAT)


def install(kind: LogFormat) -> None:
    """Format every root handler's lines as ``kind``, each with its turn id."""
    for handler in logging.root.handlers:
        handler.addFilter(TurnIdFilter())
        handler.setFormatter(formatter(kind))
