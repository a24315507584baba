"""Every setting from the environment: ``CHATGATE_<SECTION>__<KEY>``.

Each key of each section of the composed model (the core's, every feature's, every
platform's) has a variable named after its dotted key, upper-cased, with ``__`` between
the section and the key: ``recovery.max_age`` is ``CHATGATE_RECOVERY__MAX_AGE``,
``webhook.secret`` is ``CHATGATE_WEBHOOK__SECRET``. The older names (the core's
``CORE_ENV``, each platform's ``PlatformSpec.env``: ``CHATGATE_PORT``,
``CHATGATE_WEBHOOK_SECRET``, ``OPENAI_API_KEY``...) stay as aliases; when both are set the
``CHATGATE_<SECTION>__<KEY>`` one wins. A list is read from JSON (``["a","b"]``) or
comma-separated text, a mapping from JSON; an empty variable counts as unset.

The names are derived from the model rather than declared, so that a new key is reachable
from the environment the day it is added; pydantic-settings' own environment source is
not used because ``chatgate config show`` must say which variable set each value.
"""

from __future__ import annotations

import json
import types
from collections.abc import Iterator, Mapping
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from core.errors import ConfigError
from core.record import record
from gateway.settings import CORE_ENV, Settings

PREFIX = "CHATGATE_"


@record
class EnvValue:
    """One setting the environment sets: its dotted key, the variable, the value read."""

    dotted: str
    var: str
    value: object


def canonical_name(dotted: str) -> str:
    """``server.port`` -> ``CHATGATE_SERVER__PORT``."""
    section, _, key = dotted.partition(".")
    return f"{PREFIX}{section.upper()}__{key.upper()}"


def section_keys(model: type[Settings]) -> Iterator[tuple[str, Any]]:
    """Each ``section.key`` of ``model`` with the key's annotation."""
    for name, field in model.model_fields.items():
        section = field.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            for key, inner in section.model_fields.items():
                # By its alias where it has one (``budgets.global``, field ``global_``).
                yield f"{name}.{inner.alias or key}", inner.annotation


def aliases(model: type[Settings]) -> dict[str, str]:
    """The older variable names: variable -> dotted key (the core's and each platform's)."""
    found = dict(CORE_ENV)
    for spec in model.platforms.values():
        found.update({var: f"{spec.name}.{key}" for var, key in spec.env.items()})
    return {var: dotted for var, dotted in found.items() if var != canonical_name(dotted)}


def env_names(model: type[Settings]) -> dict[str, list[str]]:
    """Dotted key -> every variable that sets it, the canonical one first."""
    names = {dotted: [canonical_name(dotted)] for dotted, _ in section_keys(model)}
    for var, dotted in aliases(model).items():
        names.setdefault(dotted, [canonical_name(dotted)]).append(var)
    return names


def env_values(model: type[Settings], env: Mapping[str, str]) -> list[EnvValue]:
    """The settings ``env`` sets, aliases first so that canonical names win when applied
    in order."""
    kinds = dict(section_keys(model))
    found = [
        EnvValue(dotted, var, _parse(kinds.get(dotted), var, env[var]))
        for var, dotted in aliases(model).items()
        if env.get(var)
    ]
    for dotted, annotation in kinds.items():
        var = canonical_name(dotted)
        if env.get(var):
            found.append(EnvValue(dotted, var, _parse(annotation, var, env[var])))
    return found


def _parse(annotation: Any, var: str, raw: str) -> object:
    kind = _container(annotation)
    if kind is list and not raw.lstrip().startswith("["):
        return [part.strip() for part in raw.split(",") if part.strip()]
    if kind is None:
        return raw  # pydantic converts text to the key's type and names the key if it can't
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        what = "a JSON list or comma-separated text" if kind is list else "a JSON object"
        raise ConfigError(var, f"must be {what}") from None


def _container(annotation: Any) -> type | None:
    """``list`` or ``dict`` when the key holds one (optional or not), else None."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        kinds: set[type] = {k for arg in get_args(annotation) if (k := _container(arg))}
        return next(iter(kinds)) if len(kinds) == 1 else None
    if list in (annotation, origin):
        return list
    if dict in (annotation, origin) or (
        isinstance(annotation, type) and issubclass(annotation, BaseModel)
    ):
        return dict  # a nested section (``budgets.per_chat``) is read from a JSON object
    return None
