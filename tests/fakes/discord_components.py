"""Message components as Discord checks them, for ``tests.fakes.discord_rest``.

A message's ``components`` are up to 5 action rows (type 1) of up to 5 buttons (type 2)
each. A button has a ``style`` (1 primary, 2 secondary, 3 success, 4 danger: these need
a ``custom_id`` of 1 to 100 characters, unique in the message; 5 link: a ``url``), and a
label of at most 80 characters. A body that breaks a rule is refused with 50035 Invalid
Form Body naming the field, as Discord does.
"""

from __future__ import annotations

from typing import Any

from tests.fakes import discord_payloads as p
from tests.fakes.discord_payloads import Json

ACTION_ROW = 1
BUTTON = 2
LINK_STYLE = 5
MAX_ROWS = 5
MAX_PER_ROW = 5
MAX_CUSTOM_ID = 100
MAX_LABEL = 80


def checked_components(payload: Json) -> list[Json]:
    """The message's components as sent (``[]`` when none), or ``ApiError``."""
    rows = payload.get("components") or []
    if not isinstance(rows, list) or len(rows) > MAX_ROWS:
        raise p.invalid("components", "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length.")
    seen: set[str] = set()
    for r, row in enumerate(rows):
        children = row.get("components") if isinstance(row, dict) else None
        if row.get("type") != ACTION_ROW or not isinstance(children, list) or not children:
            raise p.invalid(f"components.{r}", "COMPONENT_LAYOUT_WIDTH_EXCEEDED", "Bad row.")
        if len(children) > MAX_PER_ROW:
            raise p.invalid(
                f"components.{r}.components", "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer."
            )
        for c, button in enumerate(children):
            _check_button(f"components.{r}.components.{c}", button, seen)
    return rows


def _check_button(where: str, button: Any, seen: set[str]) -> None:
    if not isinstance(button, dict) or button.get("type") != BUTTON:
        raise p.invalid(f"{where}.type", "UNION_TYPE_CHOICES", "Value must be one of (2,).")
    style = button.get("style")
    if style not in (1, 2, 3, 4, LINK_STYLE):
        raise p.invalid(f"{where}.style", "BASE_TYPE_CHOICES", "Value must be one of 1-5.")
    label = button.get("label") or ""
    if len(label) > MAX_LABEL:
        raise p.invalid(f"{where}.label", "BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer.")
    if style == LINK_STYLE:
        if not button.get("url"):
            raise p.invalid(f"{where}.url", "BASE_TYPE_REQUIRED", "This field is required")
        return
    custom_id = button.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        raise p.invalid(f"{where}.custom_id", "BASE_TYPE_REQUIRED", "This field is required")
    if len(custom_id) > MAX_CUSTOM_ID:
        raise p.invalid(f"{where}.custom_id", "BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer.")
    if custom_id in seen:
        raise p.invalid(
            f"{where}.custom_id", "COMPONENT_CUSTOM_ID_DUPLICATED", "Custom id is duplicated"
        )
    seen.add(custom_id)
