"""The effective configuration as ``chatgate config show`` prints it: every key of every
section, its value with secrets masked, and where the value came from.

Secrets are masked twice over: every ``SecretStr`` is dumped as ``**********``, a
database URL's password as ``***``, and then any configured secret still found in a
value's text (a token pasted into a URL, say) is replaced too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from core.record import record
from core.store.location import redacted_url
from gateway.env_settings import env_names
from gateway.log_privacy import REDACTED, configured_secrets
from gateway.settings import Settings

MASK = "**********"


@record
class Row:
    """One setting: dotted key, value as text, its source, and the variables that set it."""

    key: str
    value: str
    source: str
    env: tuple[str, ...]


def effective(settings: Settings, sources: Mapping[str, str], home_source: str) -> list[Row]:
    """Every setting of ``settings`` in model order; ``sources`` as ``load_with_sources``
    gives them (a key not in it has its default)."""
    names = env_names(type(settings))
    secrets = configured_secrets(settings)
    rows = [Row("home", str(settings.home), home_source, ("CHATGATE_HOME",))]
    dumped = settings.model_dump(mode="json", exclude={"home"}, by_alias=True)
    for section, keys in dumped.items():
        for key, value in keys.items():
            dotted = f"{section}.{key}"
            text = _masked(_text(dotted, value), secrets)
            source = sources.get(dotted) or sources.get(section) or "default"
            rows.append(Row(dotted, text, source, tuple(names.get(dotted, ()))))
    return rows


def _text(dotted: str, value: object) -> str:
    if dotted == "database.url" and isinstance(value, str) and value:
        return redacted_url(value)
    return value if isinstance(value, str) else json.dumps(value)


def _masked(text: str, secrets: frozenset[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text
