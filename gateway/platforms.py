"""The gateway's side of the platform registry: which adapters run, and what the core
and the logs need to know about each platform."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from adapters.base import Adapter
from adapters.platform import ChatPolicySettings, PlatformServices, PlatformSpec
from core.access import AccessRules
from core.errors import ConfigError
from gateway.settings import Settings


def enabled(settings: Settings) -> list[PlatformSpec[Any]]:
    """The platforms ``chatgate run`` starts with these settings, in registry order."""
    return [s for s in settings.platforms.values() if s.is_enabled(settings.platform(s.name))]


def interactive(settings: Settings) -> PlatformSpec[Any]:
    """The platform ``chatgate chat`` talks through."""
    for spec in settings.platforms.values():
        if spec.interactive is not None:
            return spec
    raise ConfigError("platforms", "no interactive platform is registered for chatgate chat")


def refuse_exposure(settings: Settings, specs: Iterable[PlatformSpec[Any]]) -> None:
    """``ConfigError`` when a platform is unsafe on the server's non-loopback host."""
    host = settings.server.host
    if is_loopback(host):
        return
    for spec in specs:
        if spec.exposed_problem is not None:
            problem = spec.exposed_problem(spec.section(settings.platform(spec.name)), host)
            if problem is not None:
                raise ConfigError(*problem)


def is_loopback(host: str) -> bool:
    """Only this machine can reach ``host`` (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # another host name: it may resolve to anything


def build_adapters(
    settings: Settings, specs: Iterable[PlatformSpec[Any]], services: PlatformServices
) -> list[Adapter]:
    return [spec.adapter(settings.platform(spec.name), services) for spec in specs]


def prompt_hints(settings: Settings) -> dict[str, str]:
    """Each platform's hint for the stable prompt tier (size and format rules)."""
    return {name: spec.prompt_hint for name, spec in settings.platforms.items() if spec.prompt_hint}


def group_sessions_by_platform(settings: Settings) -> dict[str, bool]:
    """Platforms that override ``sessions.group_sessions_per_user``."""
    found: dict[str, bool] = {}
    for name, spec in settings.platforms.items():
        if spec.group_sessions_per_user is not None:
            value = spec.group_sessions_per_user(spec.section(settings.platform(name)))
            if value is not None:
                found[name] = value
    return found


def access_rules(settings: Settings) -> dict[str, AccessRules]:
    """Each platform's access policy for the core (``core.access``)."""
    return {
        name: _rules(spec, settings.platform(name)) for name, spec in settings.platforms.items()
    }


def _rules(spec: PlatformSpec[Any], section: BaseModel) -> AccessRules:
    if spec.trusted_users:
        return AccessRules(everyone_owns=True)
    if not isinstance(section, ChatPolicySettings):
        return AccessRules()  # a platform with no policy of its own: open, no owners
    return AccessRules(
        gated=not spec.authenticated,
        dm_policy=section.dm_policy,
        group_policy=section.group_policy,
        owners=frozenset(section.owners),
        rate_limit_per_minute=section.rate_limit_per_minute,
    )


def owner_keys(settings: Settings) -> frozenset[str]:
    """Every platform's owners as ``platform:user_id`` (the default approvers)."""
    return frozenset(
        f"{name}:{owner}"
        for name, rules in access_rules(settings).items()
        for owner in rules.owners
    )


def quiet_loggers(settings: Settings) -> None:
    """Keep the lower levels of libraries that log secrets or message text off."""
    for spec in settings.platforms.values():
        for name, lowest in spec.quiet_loggers.items():
            logger = logging.getLogger(name)
            logger.setLevel(max(lowest, logging.root.level, logger.level))
