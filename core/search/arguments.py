"""`session_search` arguments: checked and defaulted before any query runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from core.errors import ToolArgumentError
from core.record import record
from core.store.search.access import SCOPE_MODES, ScopeMode

Detail = Literal["adaptive", "full"]
DETAILS: tuple[Detail, ...] = ("adaptive", "full")
MAX_QUERY_CHARS = 2_048
BROWSE_DEFAULT_LIMIT = 10


@record
class SearchArgs:
    query: str | None
    session_id: str | None
    around_message_id: int | None
    window: int
    limit: int | None
    detail: Detail
    scope: ScopeMode


def parse(args: Mapping[str, Any]) -> SearchArgs:
    """Raise ``ToolArgumentError`` for a wrong type, range or combination."""
    unknown = set(args) - set(_KNOWN)
    if unknown:
        raise ToolArgumentError(f"Unknown argument(s): {', '.join(sorted(unknown))}.")
    query = _text(args, "query")
    session_id = _text(args, "session_id")
    around = _integer(args, "around_message_id", 1, None)
    if around is not None and session_id is None:
        raise ToolArgumentError("around_message_id needs session_id (the session it belongs to).")
    if query is not None and session_id is not None:
        raise ToolArgumentError("Give query (to search) or session_id (to read), not both.")
    if query is not None and len(query) > MAX_QUERY_CHARS:
        raise ToolArgumentError(f"query is longer than {MAX_QUERY_CHARS} characters.")
    return SearchArgs(
        query=query,
        session_id=session_id,
        around_message_id=around,
        window=_integer(args, "window", 1, 20) or 5,
        limit=_integer(args, "limit", 1, 10),
        detail=cast(Detail, _choice(args, "detail", DETAILS)),
        scope=cast(ScopeMode, _choice(args, "scope", SCOPE_MODES)),
    )


_KNOWN = ("query", "session_id", "around_message_id", "window", "limit", "detail", "scope")


def _text(args: Mapping[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolArgumentError(f"{name} must be a string, not {type(value).__name__}.")
    return value.strip() or None


def _integer(args: Mapping[str, Any], name: str, low: int, high: int | None) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolArgumentError(f"{name} must be an integer, not {type(value).__name__}.")
    if value < low or (high is not None and value > high):
        bounds = f"{low}..{high}" if high is not None else f">= {low}"
        raise ToolArgumentError(f"{name} must be in {bounds}, not {value}.")
    return value


def _choice(args: Mapping[str, Any], name: str, choices: tuple[str, ...]) -> str:
    value = args.get(name)
    if value is None:
        return choices[0]
    if value not in choices:
        raise ToolArgumentError(f"{name} must be one of {', '.join(choices)}; got {value!r}.")
    return str(value)
