"""Routes for the hot path: documented like any FastAPI route, served without its layers.

A platform's message route (the webhook's ``POST /webhook/{route}``) runs once per
message. FastAPI serves a request through its middleware stack (server errors, the body
limit, an exit stack, exception handlers), the router (every route tried in order),
per-route exception handling and parameter solving: about 26 microseconds a request on
the development machine, measured in-process, where the endpoint itself and its
response take about 8. A ``DirectRoute`` endpoint takes the ``Request`` and returns a
``Response``, validating what it reads itself; ``DirectRoutes`` sends a request that
such a route matches straight to its endpoint, in front of that stack.

What the stack would have done for these endpoints is kept: a client that leaves before
its body arrived gets the 408 no one reads (``ClientDisconnect``, as the app's handler
does); any other exception propagates to the server, which logs it and answers 500, as
FastAPI's error middleware did. A method the route does not take, a path it does not
match and every other route go through FastAPI as before.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.requests import ClientDisconnect
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

Endpoint = Callable[[Request], Coroutine[Any, Any, Response]]


class DirectRoute(APIRoute):
    """A documented route whose endpoint takes the ``Request`` and returns a ``Response``.

    It appears in the OpenAPI schema like any route, but FastAPI's per-request parameter
    solving and response serialization are skipped, and so is the rest of FastAPI's
    stack once ``DirectRoutes`` is in front of it (``gateway.app``).
    """

    def get_route_handler(self) -> Endpoint:
        handler: Endpoint = self.endpoint
        return handler


class DirectRoutes:
    """ASGI: a request one of ``routes`` matches fully goes to that route's endpoint;
    anything else goes to ``app``."""

    def __init__(self, app: ASGIApp, routes: Sequence[DirectRoute]) -> None:
        self.app = app
        self.routes = tuple(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for route in self.routes:
                match, child = route.matches(scope)
                if match is Match.FULL:
                    scope["route"] = route
                    scope.update(child)
                    await _serve(route.endpoint, scope, receive, send)
                    return
        await self.app(scope, receive, send)


async def _serve(endpoint: Endpoint, scope: Scope, receive: Receive, send: Send) -> None:
    try:
        response = await endpoint(Request(scope, receive, send))
    except ClientDisconnect:  # as ``gateway.app``'s handler answers it
        response = Response(status_code=408)
    await response(scope, receive, send)


def direct_routes(routes: Sequence[Any]) -> list[DirectRoute]:
    """The ``DirectRoute``s among an app's routes, in order."""
    return [route for route in routes if isinstance(route, DirectRoute)]
