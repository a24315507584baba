"""``chatgate init`` writes every non-secret setting with its default; secrets stay in
the environment (commented references only)."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, SecretStr

from gateway.config import settings_model, starter_config
from tests.test_cli import chatgate

# Not a config key: where the profile lives ($CHATGATE_HOME), set when it is loaded.
NOT_IN_FILE = frozenset({"home"})


def _section(annotation: Any) -> type[BaseModel] | None:
    """The settings model a field nests (``X`` or ``X | None``), else None (a leaf)."""
    for arg in typing.get_args(annotation) or (annotation,):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def _is_secret(annotation: Any) -> bool:
    return SecretStr in (typing.get_args(annotation) or (annotation,))


def settings_fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, bool]]:
    """``(dotted key, is a secret)`` for every leaf of ``model``; mappings are leaves."""
    for attribute, field in model.model_fields.items():
        name = field.alias or attribute  # the key a file holds (``budgets.global``)
        annotation = field.annotation
        nested = _section(annotation)
        if nested is not None and typing.get_origin(annotation) in (None, types.UnionType):
            yield from settings_fields(nested, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", _is_secret(annotation)


def lookup(data: Any, dotted: str) -> tuple[bool, Any]:
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return False, None
        data = data[part]
    return True, data


def test_init_writes_every_non_secret_setting_with_its_default(home: Path) -> None:
    result = chatgate("init")
    assert result.returncode == 0, result.stderr
    written = yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8"))
    model = settings_model()
    defaults = model(home=home.resolve()).model_dump(mode="json", by_alias=True)

    fields = [(k, s) for k, s in settings_fields(model) if k not in NOT_IN_FILE]
    missing = [k for k, secret in fields if not secret and not lookup(written, k)[0]]
    present = [k for k, secret in fields if not secret and k not in missing]
    differ = [k for k in present if lookup(written, k) != lookup(defaults, k)]
    secrets_written = [k for k, secret in fields if secret and lookup(written, k)[0]]

    assert len(fields) > 100  # the walk reached every section's fields
    assert missing == []
    assert differ == []
    assert secrets_written == []  # a secret is an environment reference, never a value


def test_every_secret_is_a_commented_environment_reference() -> None:
    text = starter_config()  # a function: deploy files can be generated from it too
    secrets = [k for k, secret in settings_fields(settings_model()) if secret]

    assert len(secrets) >= 5  # the walk found the API keys, tokens and webhook secrets
    unreferenced = [k for k in secrets if f"# {k.rsplit('.', 1)[-1]}: ..." not in text]
    assert unreferenced == []
