"""The FastAPI application: the platforms' routes, health, readiness and metrics."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from fastapi.telemetry import TelemetryConfig
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp

from adapters.direct_route import DirectRoutes, direct_routes
from core.clock import Clock, SystemClock
from core.errors import StoreError, StoreUnavailable
from core.models.base import ModelClient
from core.store.lease import DatabaseLease
from core.tools import Tool
from gateway import heap, http_errors, metrics, platforms
from gateway.runtime import Gateway, build_features, open_gateway, platform_services
from gateway.settings import Settings

log = logging.getLogger(__name__)

METRICS_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Prometheus text exposition",
        "content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}},
    }
}
NO_TELEMETRY: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False}
READY_RESPONSES: dict[int | str, dict[str, Any]] = {
    503: {
        "description": "Starting, stopping, the database unreachable or an adapter unhealthy",
        "content": {"application/json": {"schema": {"type": "object"}}},
    }
}


def create_app(
    settings: Settings,
    *,
    tools: Sequence[Tool] = (),
    clock: Clock | None = None,
    model: ModelClient | None = None,
    lease: DatabaseLease | None = None,
) -> FastAPI:
    """Build the app; the gateway starts in its lifespan and stops with it.

    Features and adapters are built here, before the server starts, so a bad setting is
    a one-line configuration error rather than a failed start-up. The gateway owns the
    database: it holds ``lease`` if given (``chatgate run`` takes it before serving), or
    takes one itself.
    """
    features = build_features(settings)
    # No platform served by ``chatgate run`` ends the process itself; uvicorn's signals do.
    services = platform_services(settings, clock or SystemClock(), asyncio.Event())
    specs = platforms.enabled(settings)
    platforms.refuse_exposure(settings, specs)
    adapters = platforms.build_adapters(settings, specs, services)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_gateway(
            settings,
            adapters,
            features=features,
            tools=tools,
            clock=clock,
            model=model,
            lease=lease,
        ) as gw:
            app.state.gateway = gw
            heap.settle()  # start-up's objects out of every later collection
            yield

    # FastAPI's own OpenTelemetry hooks stay off: chatgate traces turns itself
    # (gateway.otel), and the hooks' per-request provider checks cost ~2 % of a turn.
    app = GatewayApp(title="chatgate", version="0.1.0", lifespan=lifespan, telemetry=NO_TELEMETRY)
    for spec, adapter in zip(specs, adapters, strict=True):
        if spec.mounts_routes:
            adapter.install(app)
    _add_health_routes(app)
    http_errors.install(app)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    return app


class GatewayApp(FastAPI):
    """FastAPI, with the platforms' message routes (``DirectRoute``) served in front of
    its middleware stack (``adapters.direct_route``)."""

    def build_middleware_stack(self) -> ASGIApp:
        # Built on the first request, once every adapter has installed its routes.
        return DirectRoutes(super().build_middleware_stack(), direct_routes(self.router.routes))


async def _client_gone(request: Request, exc: Exception) -> Response:
    # The client left (or was cut off by the read timeout) before its request arrived
    # whole: nobody is there to read an answer, and it is no error of ours to log.
    return Response(status_code=408)


async def drain(app: FastAPI) -> None:
    """Begin stopping the gateway ``app`` runs (``Gateway.drain``), if it has started."""
    gateway: Gateway | None = getattr(app.state, "gateway", None)
    if gateway is not None:
        await gateway.drain()


def _store_problem(problem: StoreUnavailable) -> dict[str, str | None]:
    return {
        "status": "store unavailable",
        "cause": problem.kind,
        "reason": problem.describe(),
        "path": problem.path,
        "detail": problem.detail,
    }


def _gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


GatewayDep = Annotated[Gateway, Depends(_gateway)]


def _add_health_routes(app: FastAPI) -> None:
    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        """The process is alive."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], responses=READY_RESPONSES)
    async def readyz(gateway: GatewayDep) -> JSONResponse:
        """The SessionDB answers and can write, and every adapter has started and is
        healthy. While the store cannot write, 503 names the cause (``cause``:
        ``disk_full``, ``locked``, ``read_only`` or ``unreachable``; ``path`` when known)."""
        if not gateway.ready:
            status = "stopping" if gateway.stopping else "starting"
            return JSONResponse({"status": status}, status_code=503)
        problem = gateway.db.health.problem
        if problem is not None:
            return JSONResponse(_store_problem(problem), status_code=503)
        try:
            await gateway.db.ping()
        except StoreError as exc:
            log.warning("readiness check failed: %s", exc.__class__.__name__)
            return JSONResponse({"status": "database unreachable"}, status_code=503)
        unhealthy = sorted(name for name, a in gateway.adapters.items() if not a.healthy)
        if unhealthy:
            body = {"status": "adapter unhealthy", "unhealthy": unhealthy}
            return JSONResponse(body, status_code=503)
        return JSONResponse({"status": "ready", "adapters": sorted(gateway.adapters)})

    @app.get("/metrics", tags=["health"], response_class=Response, responses=METRICS_RESPONSES)
    async def prometheus_metrics(gateway: GatewayDep) -> Response:
        """Prometheus metrics."""
        return Response(await metrics.scrape(gateway), media_type=CONTENT_TYPE_LATEST)
