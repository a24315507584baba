"""Reading a profile's settings: ``$CHATGATE_HOME/config.yaml`` first, environment over it.

The model a profile is read into is composed here: the core's sections
(``gateway.settings``), then each feature's (``gateway.features.FEATURES``), then each
platform's (``adapters.registry``), so a new feature or platform brings its section,
its environment variables and its starter block without an edit here. Every setting
has a safe default, so an empty home starts the gateway on SQLite, the webhook adapter
and the offline model. ``load_settings`` raises ``ConfigError`` naming the first
invalid key in dotted form.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError, create_model

from adapters import registry
from adapters.platform import PlatformSpec
from core.errors import ConfigError
from gateway.env_settings import env_values
from gateway.features import FEATURES
from gateway.features.base import FeatureSpec
from gateway.settings import Settings
from gateway.starter_config import CORE_STARTER, STARTER_HEADER

__all__ = [
    "Settings",
    "default_home",
    "load_settings",
    "load_with_sources",
    "settings_model",
    "starter_config",
]

_models: dict[tuple[int, ...], type[Settings]] = {}


def default_home() -> Path:
    return Path(os.environ.get("CHATGATE_HOME") or Path.home() / ".chatgate").expanduser()


def settings_model(
    platforms: Sequence[PlatformSpec[Any]] | None = None,
    features: Sequence[FeatureSpec] = FEATURES,
) -> type[Settings]:
    """The settings model with a section for each feature and platform (cached)."""
    specs = tuple(platforms if platforms is not None else registry.platforms().values())
    # By identity: specs hold mappings (unhashable); the model keeps them alive.
    key = tuple(id(spec) for spec in (*specs, *features))
    if key not in _models:
        _models[key] = _compose(specs, features)
    return _models[key]


def _compose(
    platforms: Sequence[PlatformSpec[Any]], features: Sequence[FeatureSpec]
) -> type[Settings]:
    sections: dict[str, type[BaseModel]] = {
        f.name: f.settings for f in features if f.settings is not None
    }
    for spec in platforms:
        if spec.name in sections or spec.name in Settings.model_fields:
            raise ConfigError(spec.name, "a platform may not reuse a settings section's name")
        sections[spec.name] = spec.settings
    fields: dict[str, Any] = {
        name: (model, Field(default_factory=model)) for name, model in sections.items()
    }
    model = create_model("Settings", __base__=Settings, **fields)
    model.section_names = {m: name for name, m in sections.items()}
    model.platforms = {spec.name: spec for spec in platforms}
    return model


def starter_config(features: Sequence[FeatureSpec] = FEATURES) -> str:
    """The commented config.yaml that ``chatgate init`` writes: every section, defaults."""
    blocks = [CORE_STARTER, *(f.starter_config for f in features)]
    blocks += [spec.starter_config for spec in registry.platforms().values()]
    return STARTER_HEADER + "\n".join(block.strip("\n") + "\n" for block in blocks if block)


def load_settings(
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    *,
    overrides: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> Settings:
    """Read ``config.yaml`` under ``home`` (or ``config_file``), then apply environment
    variables, then ``overrides`` (dotted setting -> value, e.g. from command-line options)."""
    return load_with_sources(home, env, overrides=overrides, config_file=config_file)[0]


def load_with_sources(
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    *,
    overrides: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> tuple[Settings, dict[str, str]]:
    """``load_settings``, and where each set value came from: dotted key -> ``file``,
    ``env NAME`` or ``option`` (a key not listed has its default)."""
    env = os.environ if env is None else env
    home = (home or default_home()).expanduser().resolve()
    model = settings_model()
    data = _read_yaml(config_file or home / "config.yaml")
    sources = dict.fromkeys(_file_keys(data), "file")
    for found in env_values(model, env):
        _set_dotted(data, found.dotted, found.value)
        sources[found.dotted] = f"env {found.var}"
    for dotted, value in (overrides or {}).items():
        _set_dotted(data, dotted, value)
        sources[dotted] = "option"
    data["home"] = home
    try:
        settings = _validated(model, data)
    except ConfigError as exc:
        raise _named(exc, sources) from None
    given_env, given = dict(env), dict(overrides or {})
    settings.read_again_with(
        lambda: load_settings(home, given_env, overrides=given, config_file=config_file)
    )
    return settings, sources


def _validated(model: type[Settings], data: dict[str, Any]) -> Settings:
    try:
        settings = model.model_validate(data)
    except ValidationError as exc:
        raise _config_error(exc) from None
    settings.model_config_for_core()  # provider settings that only make sense together
    settings.tools.check_platforms(model.platforms)
    for spec in model.platforms.values():
        if spec.check is not None:
            spec.check(settings.platform(spec.name))
    return settings


def _file_keys(data: Mapping[str, Any]) -> list[str]:
    keys: list[str] = []
    for section, value in data.items():
        if isinstance(value, Mapping):
            keys += [f"{section}.{key}" for key in value]
        else:
            keys.append(str(section))
    return keys


def _named(exc: ConfigError, sources: Mapping[str, str]) -> ConfigError:
    """``exc`` naming the variable its key came from, when the environment set it."""
    source = next(
        (src for key, src in sources.items() if exc.key == key or exc.key.startswith(key + ".")),
        "",
    )
    if not source.startswith("env "):
        return exc
    return ConfigError(exc.key, f"{exc.reason} (set by {source.removeprefix('env ')})")


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(str(path), f"not valid YAML{where}") from None
    except OSError as exc:
        raise ConfigError(str(path), f"cannot be read: {exc.strerror}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(str(path), "must be a mapping of settings")
    return loaded


def _set_dotted(data: dict[str, Any], dotted: str, value: object) -> None:
    *parents, leaf = dotted.split(".")
    node = data
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[leaf] = value


def _config_error(exc: ValidationError) -> ConfigError:
    first = exc.errors()[0]
    key = ".".join(str(p) for p in first["loc"]) or "config"
    reason = first["msg"]
    if first["type"] == "extra_forbidden":
        reason = "unknown setting"
    return ConfigError(key, reason)
