"""A hot route served in front of FastAPI's stack answers as FastAPI would have: the
same endpoint, 405 for a method it does not take, 408 for a client that left, 500 for a
failure, and every other route untouched."""

from __future__ import annotations

import httpx
import pytest
from fastapi import Request, Response
from fastapi.responses import JSONResponse
from starlette.requests import ClientDisconnect

from adapters.direct_route import DirectRoute
from gateway.app import GatewayApp


def make_app() -> GatewayApp:
    app = GatewayApp()

    async def hot(request: Request) -> Response:
        body = await request.body()
        if body == b"leave":
            raise ClientDisconnect
        if body == b"fail":
            raise RuntimeError("boom")
        route = request.path_params["route"]
        return JSONResponse({"route": route, "body": body.decode()})

    app.router.add_api_route(
        "/hot/{route}", hot, route_class_override=DirectRoute, methods=["POST"]
    )

    @app.get("/hot/{route}/cold")
    async def cold(route: str) -> dict[str, str]:
        return {"cold": route}

    return app


def client(app: GatewayApp) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://test")


async def test_the_endpoint_gets_its_path_parameters_and_body() -> None:
    async with client(make_app()) as c:
        answer = await c.post("/hot/a%2Db", content=b"hi")

    assert answer.status_code == 200
    assert answer.json() == {"route": "a-b", "body": "hi"}


async def test_other_methods_and_routes_go_through_fastapi() -> None:
    app = make_app()
    async with client(app) as c:
        wrong_method = await c.get("/hot/x")
        cold = await c.get("/hot/x/cold")
        missing = await c.post("/nowhere")

    assert wrong_method.status_code == 405
    assert wrong_method.headers["allow"] == "POST"
    assert cold.json() == {"cold": "x"}
    assert missing.status_code == 404
    assert "/hot/{route}" in app.openapi()["paths"]


async def test_a_client_that_left_gets_a_408_and_nothing_is_raised() -> None:
    async with client(make_app()) as c:
        answer = await c.post("/hot/x", content=b"leave")

    assert answer.status_code == 408


async def test_a_failing_endpoint_propagates_to_the_server() -> None:
    transport = httpx.ASGITransport(app=make_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        with pytest.raises(RuntimeError, match="boom"):
            await c.post("/hot/x", content=b"fail")
