"""The bounds on a runaway turn, and the one line a person reads when one stops it.

Three bounds stop a turn: ``sessions.max_iterations`` (model calls),
``sessions.max_tool_calls_per_turn`` (tool calls run) and
``sessions.turn_timeout_seconds`` (wall time, ``core.turn_watch``). Whichever stops it,
the turn's transcript is closed before it is stored (``TurnRunner.stop``): every tool
call the model asked for gets a result, the ones not run saying why, and the turn ends
with the bound's line as the assistant's answer, so the next turn sends the provider a
valid sequence and the model knows what was and was not done.
"""

from __future__ import annotations

from core.record import record

_GO_ON = "Tell me to continue, or narrow the request."


@record
class TurnBound:
    """A bound that stopped a turn: the line for the chat, and the result of a call it
    kept from running."""

    line: str
    not_run: str


def iterations(limit: int) -> TurnBound:
    what = f"its limit of {limit} model calls (sessions.max_iterations)"
    return _bound(what)


def tool_calls(limit: int) -> TurnBound:
    what = f"its limit of {limit} tool calls (sessions.max_tool_calls_per_turn)"
    return _bound(what)


def timeout(seconds: float) -> TurnBound:
    what = f"its time limit of {duration(seconds)} (sessions.turn_timeout_seconds)"
    return TurnBound(
        line=f"I stopped: this turn reached {what}. Tell me to continue, or ask for less at once.",
        not_run=(
            f"Not run, or stopped before it finished: the turn reached {what}. "
            "Check whether it took effect before calling it again."
        ),
    )


def _bound(what: str) -> TurnBound:
    return TurnBound(
        line=f"I stopped: this turn reached {what}. {_GO_ON}",
        not_run=f"Not run: the turn reached {what}.",
    )


def duration(seconds: float) -> str:
    """``seconds`` as a person reads it: "1 second", "90 seconds", "5 minutes"."""
    if seconds >= 120 and seconds % 60 == 0:
        return f"{seconds / 60:g} minutes"
    return "1 second" if seconds == 1 else f"{seconds:g} seconds"
