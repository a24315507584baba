"""The ``webhook:`` settings section: the HTTP adapter, its secrets and its routes."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr

from adapters.platform import ChatPolicySettings, Section
from adapters.streaming_mode import StreamingMode


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
    # Base64 images ride in the body (4/3 of their size): 8 MiB holds a phone photo.
    # Bodies are held in memory while read, up to server.max_connections at once.
    max_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    max_skew_seconds: int = Field(default=300, ge=1)
    wait_timeout_seconds: float = Field(default=120.0, gt=0)
    # Also accept the old signature over timestamp and body only (not bound to the
    # method, path and query): for clients not yet updated.
    legacy_signatures: bool = False
    # Signatures remembered to refuse replays (409) within max_skew_seconds; when this
    # many are live, new signed requests get 503 until older ones expire.
    replay_cache_size: int = Field(default=100_000, ge=1, le=10_000_000)
    # Start on a non-loopback address with no secret (anyone who can reach the port
    # talks to the model and reads every chat's replies).
    allow_unsigned: bool = False
    # Each user of one webhook chat gets their own session (as group members do on
    # other platforms); otherwise the chat's users share one, and /new and /stop act
    # on it for all of them.
    sessions_per_user: bool = False
    # With Accept: text/event-stream, send the model's deltas as they come (auto), or
    # only the done event (off); streaming.enabled: false turns it off too.
    streaming: StreamingMode = "auto"
    # Fetch image urls that resolve to private, loopback or link-local addresses (a
    # forged request could otherwise make the gateway read services only it can reach).
    fetch_private_urls: bool = False
    routes: dict[str, WebhookRoute] = Field(default_factory=dict)
