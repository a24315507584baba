"""The doctor's remote checks: the model endpoint, each enabled platform's own check
(``PlatformSpec.doctor``) and the memory provider.

The model endpoint is asked for its model list (``GET /models`` on an OpenAI-compatible
server, ``GET /v1/models`` on Anthropic's): it proves the address, the key and, when
the list is served, the model name, without spending tokens. A compatible server that
serves no list (404) is asked for one token of a completion instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from adapters.probe import Probe, http_get, refused
from core.errors import ConfigError
from core.memory.provider import load_provider
from core.models.base import ModelConfig
from gateway import platforms
from gateway.features.memory import MemorySettings
from gateway.settings import Settings

OPENAI_BASE = "https://api.openai.com/v1"
ANTHROPIC_BASE = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"


async def bounded(name: str, probe: Awaitable[Probe | None], within: float) -> tuple[str, Probe]:
    """``(name, probe)``, failed if it takes longer than ``within`` (and a little slack)."""
    try:
        found = await asyncio.wait_for(probe, within + 1)
    except TimeoutError:
        found = Probe(False, f"no answer within {within:g} s", "check that it is up")
    return name, found or Probe(True, "nothing to check")


def remote_checks(settings: Settings, within: float) -> list[Awaitable[tuple[str, Probe]]]:
    checks: list[Awaitable[tuple[str, Probe]]] = [
        bounded("model", model_probe(settings.model_config_for_core(), within), within)
    ]
    for spec in platforms.enabled(settings):
        if spec.doctor is not None:
            probe = spec.probe(settings.platform(spec.name), within)
            checks.append(bounded(f"{spec.name} token", probe, within))
    memory = settings.section(MemorySettings)
    if memory.enabled and memory.provider:
        checks.append(bounded("memory provider", provider_probe(settings), within))
    return checks


async def model_probe(cfg: ModelConfig, within: float) -> Probe:
    if cfg.provider == "offline":
        return Probe(True, "offline model: no endpoint to reach")
    if cfg.provider == "anthropic":
        base = (cfg.base_url or ANTHROPIC_BASE).rstrip("/")
        headers = {"x-api-key": cfg.api_key or "", "anthropic-version": ANTHROPIC_VERSION}
        url, key = f"{base}/v1/models", "ANTHROPIC_API_KEY (model.anthropic_api_key)"
    else:
        base = (cfg.base_url or OPENAI_BASE).rstrip("/")
        headers = {"Authorization": f"Bearer {cfg.api_key}"} if cfg.api_key else {}
        url, key = f"{base}/models", "OPENAI_API_KEY (model.api_key)"
    answer = await http_get(url, headers, within)
    if isinstance(answer, str):
        fix = "start the server, or correct model.base_url (OPENAI_BASE_URL)"
        return Probe(False, f"{cfg.provider} at {base}: {answer}", fix)
    if answer.status_code == 404 and cfg.provider != "anthropic":
        return await _one_token(cfg, base, headers, key, within)
    return refused(answer, "the API key", f"set {key}") or _listed(cfg, base, answer.json())


async def _one_token(
    cfg: ModelConfig, base: str, headers: dict[str, str], key: str, within: float
) -> Probe:
    """For a server without ``/models``: the smallest completion proves address, key and
    model name at the cost of one token."""
    ask = {"model": cfg.model, "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}
    answer = await http_get(f"{base}/chat/completions", headers, within, post=ask)
    if isinstance(answer, str):
        return Probe(False, f"{cfg.provider} at {base}: {answer}", "check that it is up")
    if answer.status_code in (400, 404):
        fix = "set CHATGATE_MODEL (model.name) to a model the server serves"
        return Probe(False, f"{base} refused a completion with model {cfg.model!r}", fix)
    found = refused(answer, "the API key", f"set {key}")
    return found or Probe(True, f"{cfg.provider} at {base}, model {cfg.model} (one-token call)")


def _listed(cfg: ModelConfig, base: str, body: Any) -> Probe:
    data = body.get("data") if isinstance(body, dict) else None
    ids = [m.get("id") for m in data if isinstance(m, dict)] if isinstance(data, list) else []
    if ids and cfg.model not in ids:
        offered = ", ".join(str(i) for i in ids[:5])
        return Probe(
            False,
            f"{base} does not offer model {cfg.model!r}",
            f"set CHATGATE_MODEL (model.name) to one it offers: {offered}",
        )
    return Probe(True, f"{cfg.provider} at {base}, model {cfg.model}")


async def provider_probe(settings: Settings) -> Probe:
    memory = settings.section(MemorySettings)
    try:
        provider = load_provider(memory.provider, memory.provider_options, settings.home)
    except ConfigError as exc:
        return Probe(False, str(exc), "correct memory.provider or memory.provider_options")
    if provider is None:
        return Probe(False, f"{memory.provider} is not available here", "install it, or unset it")
    return Probe(True, f"{memory.provider} is available")
