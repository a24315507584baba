"""The ``webhook:`` settings section: the HTTP adapter, its secrets and its routes."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr

from adapters.platform import ChatPolicySettings, Section


class WebhookRoute(Section):
    secret: SecretStr | None = None
    system_message: str | None = None
    workspace: Path | None = None


class WebhookSettings(ChatPolicySettings):
    enabled: bool = True
    # Webhook clients are machines holding the route's secret, and a waiting request
    # held back by a limit would only time out: no limit unless one is set.
    rate_limit_per_minute: int = Field(default=0, ge=0, le=10_000)
    secret: SecretStr | None = None
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    max_skew_seconds: int = Field(default=300, ge=1)
    wait_timeout_seconds: float = Field(default=120.0, gt=0)
    routes: dict[str, WebhookRoute] = Field(default_factory=dict)
