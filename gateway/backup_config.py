"""The profile's ``config.yaml`` with its secrets taken out, for a backup archive.

A backup is copied to places the bot's tokens should not go. A key is dropped when its
value holds any configured secret (every ``SecretStr`` of the effective settings, which
includes what came from the environment), or when its name says it is one (``token``,
``secret``, ``password``, ``api_key``); a password inside a database URL is masked. The
dropped keys are listed so that the operator knows what to supply again after a restore
(in the environment, or back in the file).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import yaml

from core.store.location import masked_url
from gateway.log_privacy import configured_secrets
from gateway.settings import Settings

SECRET_NAME = re.compile(r"token|secret|password|passwd|api_key|apikey", re.IGNORECASE)


def secret_free_config(settings: Settings) -> tuple[str | None, list[str]]:
    """``config.yaml`` without secrets (None when the home has none), and the dotted
    keys that were dropped."""
    path = settings.home / "config.yaml"
    if not path.exists():
        return None, []
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    dropped: list[str] = []
    clean = _scrub(raw, "", configured_secrets(settings), dropped)
    return yaml.safe_dump(clean, sort_keys=False, allow_unicode=True), dropped


def _scrub(value: Any, where: str, secrets: frozenset[str], dropped: list[str]) -> Any:
    if isinstance(value, dict):
        kept: dict[Any, Any] = {}
        for key, child in value.items():
            dotted = f"{where}.{key}" if where else str(key)
            if _is_secret(str(key), child, secrets):
                dropped.append(dotted)
                continue
            kept[key] = _scrub(child, dotted, secrets, dropped)
        return kept
    if isinstance(value, list):
        return [_scrub(child, f"{where}[{n}]", secrets, dropped) for n, child in enumerate(value)]
    if isinstance(value, str):
        return masked_url(value)
    return value


def _is_secret(key: str, value: Any, secrets: Iterable[str]) -> bool:
    if isinstance(value, dict | list):
        return False
    if value is not None and SECRET_NAME.search(key):
        return True
    text = str(value)
    return any(secret in text for secret in secrets)
