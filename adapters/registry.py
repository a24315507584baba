"""The platforms chatgate talks on: the built-ins, and those other packages add.

Each platform is one package under ``adapters/`` exposing one ``PlatformSpec``: its
name, the model of its settings section (``<name>:`` in config.yaml) and the
environment variables that set it, the hint the stable prompt tier gives the model
about the platform's size and format rules, and a factory that builds the adapter
from its settings. Everything the gateway does per platform (config sections, env
overrides, the starter config, ``/readyz``, the prompt hint, the CLI's logging) comes
from these entries; no platform name is written anywhere else.

A package outside chatgate adds a platform with an entry point in the
``chatgate.platforms`` group whose object is its ``PlatformSpec``, or by calling
``register`` before the gateway loads its settings.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points
from typing import Any

from adapters.discord import SPEC as DISCORD
from adapters.platform import PlatformSpec
from adapters.telegram import SPEC as TELEGRAM
from adapters.terminal import SPEC as TERMINAL
from adapters.webhook import SPEC as WEBHOOK
from core.errors import ConfigError

ENTRY_POINT_GROUP = "chatgate.platforms"

AnySpec = PlatformSpec[Any]

_registered: dict[str, AnySpec] = {}


def register(spec: AnySpec) -> None:
    """Add a platform (a third-party package's, or a test's) to every later lookup."""
    _check_name(spec.name)
    _registered[spec.name] = spec


def unregister(name: str) -> None:
    """Take back a platform added with ``register`` (for tests)."""
    _registered.pop(name, None)


# The platforms that ship with chatgate, in the order their sections are listed.
BUILTIN: tuple[AnySpec, ...] = (WEBHOOK, TERMINAL, TELEGRAM, DISCORD)


def platforms() -> dict[str, AnySpec]:
    """Every known platform by name: built-ins, entry points, then ``register`` calls."""
    found: dict[str, AnySpec] = {spec.name: spec for spec in BUILTIN}
    for spec in _entry_point_specs():
        if spec.name in found:
            raise ConfigError("platforms", f"{spec.name!r} is registered twice")
        found[spec.name] = spec
    for name, spec in _registered.items():
        if name in found and found[name] is not spec:
            raise ConfigError("platforms", f"{name!r} is registered twice")
        found[name] = spec
    return found


def forget_installed() -> None:
    """Look for installed platforms afresh at the next lookup (after an install in-process)."""
    _entry_point_specs.cache_clear()


@cache  # installed packages do not change while the process runs
def _entry_point_specs() -> tuple[AnySpec, ...]:
    specs: list[AnySpec] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            spec = ep.load()
        except ImportError as exc:
            raise ConfigError("platforms", f"cannot import {ep.value}: {exc}") from exc
        if not isinstance(spec, PlatformSpec):
            raise ConfigError("platforms", f"entry point {ep.value} is not a PlatformSpec")
        _check_name(spec.name)
        specs.append(spec)
    return tuple(specs)


def _check_name(name: str) -> None:
    if not (name.isidentifier() and name.islower()):
        raise ConfigError("platforms", f"platform name {name!r} must be a lowercase identifier")
