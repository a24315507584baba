"""The FastAPI application: webhook routes, health, readiness and metrics."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from adapters.base import Adapter
from adapters.telegram import TelegramAdapter, TelegramOptions
from adapters.telegram_updates import Access
from adapters.webhook import WebhookAdapter, WebhookOptions
from core.clock import Clock, SystemClock
from core.errors import StoreError
from core.models.base import ModelClient
from core.tools import Tool
from gateway import metrics
from gateway.config import Settings
from gateway.memory_setup import memory_setup
from gateway.runtime import Gateway, open_gateway

log = logging.getLogger(__name__)


def webhook_options(settings: Settings) -> WebhookOptions:
    hook = settings.webhook
    return WebhookOptions(
        secret=hook.secret.get_secret_value() if hook.secret else None,
        route_secrets={
            name: route.secret.get_secret_value()
            for name, route in hook.routes.items()
            if route.secret is not None
        },
        max_body_bytes=hook.max_body_bytes,
        max_skew_seconds=hook.max_skew_seconds,
        wait_timeout_seconds=hook.wait_timeout_seconds,
    )


def telegram_options(settings: Settings) -> TelegramOptions:
    t = settings.telegram
    assert t.bot_token is not None
    return TelegramOptions(
        token=t.bot_token.get_secret_value(),
        base_url=t.base_url,
        base_file_url=t.file_url,
        mode=t.mode,
        webhook_url=t.webhook_url,
        webhook_secret=t.webhook_secret.get_secret_value() if t.webhook_secret else None,
        webhook_path=t.webhook_path,
        max_backlog_age=t.max_backlog_age,
        require_mention=t.require_mention,
        handle_edits=t.handle_edits,
        access=Access.of(t.allowed_users, t.allowed_chats, t.allow_all_users),
        max_file_bytes=t.max_file_bytes,
        cache_dir=settings.home / "cache",
        poll_timeout_seconds=t.poll_timeout_seconds,
    )


def discord_adapter(settings: Settings, now: Callable[[], float]) -> Adapter:
    """The Discord adapter; discord.py is imported only when a token is set."""
    from adapters.discord import DiscordAdapter, DiscordOptions
    from adapters.discord_messages import Access as DiscordAccess

    d = settings.discord
    assert d.bot_token is not None
    options = DiscordOptions(
        token=d.bot_token.get_secret_value(),
        api_base=d.api_base,
        gateway_url=d.gateway_url,
        message_content=d.message_content,
        require_mention=d.require_mention,
        access=DiscordAccess.of(
            d.allowed_users, d.allowed_roles, d.allowed_channels, d.allow_all_users
        ),
        allow_bots=d.allow_bots,
        catch_up_max_age=d.catch_up_max_age,
        max_file_bytes=d.max_file_bytes,
        watchdog_silence_seconds=d.watchdog_silence_seconds,
        slash_commands=d.slash_commands,
        cache_dir=settings.home / "cache",
    )
    return DiscordAdapter(options, now=now)


def create_app(
    settings: Settings,
    *,
    tools: Sequence[Tool] = (),
    clock: Clock | None = None,
    model: ModelClient | None = None,
) -> FastAPI:
    """Build the app; the gateway starts in its lifespan and stops with it."""
    memory = memory_setup(settings)  # before start-up: a bad provider is a config error
    adapters: list[Adapter] = []
    now = (clock or SystemClock()).now
    webhook = (
        WebhookAdapter(webhook_options(settings), now=now) if settings.webhook.enabled else None
    )
    if webhook is not None:
        adapters.append(webhook)
    telegram = (
        TelegramAdapter(telegram_options(settings), now=now) if settings.telegram.enabled else None
    )
    if telegram is not None:
        adapters.append(telegram)
    if settings.discord.enabled:
        adapters.append(discord_adapter(settings, now))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_gateway(
            settings, adapters, tools=tools, clock=clock, model=model, memory=memory
        ) as gw:
            app.state.gateway = gw
            # Start-up has built what lives as long as the process: imported modules,
            # pydantic validators, SQLAlchemy metadata, the routes (~120k objects).
            # Frozen, they are no longer walked by every full collection, a 50-85 ms
            # pause under load that stalls every request in flight (bench: p99 ~100 ms
            # -> ~23 ms). Collect first, so no garbage is frozen. Not undone at
            # shutdown: the process ends, and in tests an unfreeze made each later
            # start's collection walk everything again (+5 s on the suite).
            gc.collect()
            gc.freeze()
            yield

    app = FastAPI(title="chatgate", version="0.1.0", lifespan=lifespan)
    if webhook is not None:
        webhook.install(app)
    if telegram is not None:
        telegram.install(app)
    _add_health_routes(app)
    return app


def _gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


GatewayDep = Annotated[Gateway, Depends(_gateway)]


def _add_health_routes(app: FastAPI) -> None:
    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        """The process is alive."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"])
    async def readyz(gateway: GatewayDep) -> JSONResponse:
        """The SessionDB answers and every adapter has started and is healthy."""
        if not gateway.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        try:
            await gateway.db.ping()
        except StoreError as exc:
            log.warning("readiness check failed: %s", exc.__class__.__name__)
            return JSONResponse({"status": "database unreachable"}, status_code=503)
        unhealthy = sorted(
            name for name, a in gateway.adapters.items() if not getattr(a, "healthy", True)
        )
        if unhealthy:
            body = {"status": "adapter unhealthy", "unhealthy": unhealthy}
            return JSONResponse(body, status_code=503)
        return JSONResponse({"status": "ready", "adapters": sorted(gateway.adapters)})

    @app.get("/metrics", tags=["health"])
    async def prometheus_metrics(gateway: GatewayDep) -> Response:
        """Prometheus metrics."""
        return Response(metrics.render(gateway), media_type=CONTENT_TYPE_LATEST)
