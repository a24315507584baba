"""``build_model_client``: the configured provider, ready to use.

Providers are looked up by name in ``PROVIDERS`` (add one there, not in an
if/elif chain). Network providers come wrapped in ``RetryingModel``; the offline
provider cannot fail transiently, so it is returned as is.
"""

from __future__ import annotations

from collections.abc import Callable

from core.errors import ConfigError
from core.models.base import ModelClient, ModelConfig
from core.models.offline import OfflineModel
from core.models.retrying import RetryingModel
from core.retry import RetryPolicy


def _openai(cfg: ModelConfig) -> ModelClient:
    from core.models.openai_client import OpenAIChatModel

    return OpenAIChatModel(cfg)


def _anthropic(cfg: ModelConfig) -> ModelClient:
    from core.models.anthropic_client import AnthropicModel

    return AnthropicModel(cfg)


# Provider SDKs are imported on first use: they take seconds to import, and most
# CLI commands (and every offline start) never need them.
PROVIDERS: dict[str, Callable[[ModelConfig], ModelClient]] = {
    "openai": _openai,
    "anthropic": _anthropic,
}


def retry_policy_for(cfg: ModelConfig) -> RetryPolicy:
    """The retry policy a model configuration asks for."""
    return RetryPolicy(
        attempts=cfg.max_retries,
        base_seconds=cfg.retry_base_seconds,
        max_seconds=cfg.retry_max_seconds,
    )


def build_model_client(cfg: ModelConfig) -> ModelClient:
    """The client for ``cfg.provider``; raises ``ConfigError`` for missing settings."""
    if cfg.provider == "offline":
        return OfflineModel()
    build = PROVIDERS.get(cfg.provider)
    if build is None:
        raise ConfigError("model.provider", f"unknown provider {cfg.provider!r}")
    return RetryingModel(build(cfg), retry_policy_for(cfg), call_timeout=cfg.call_timeout_seconds)
