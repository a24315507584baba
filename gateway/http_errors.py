"""One shape for every error our HTTP routes answer: ``{"error": "...", "field": "..."?}``.

The webhook builds that body itself (``RequestRefused``); these handlers give the same
shape to what FastAPI and Starlette answer on their own: a path or query value that does
not validate (422, FastAPI's default being ``{"detail": [...]}``), no such route (404),
a method the route does not take (405).
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

# Statuses whose answers carry no body.
BODILESS = frozenset({204, 304})


def install(app: FastAPI) -> None:
    """Answer ``app``'s validation and HTTP errors in the one shape."""
    # The decorator form: ``add_exception_handler`` types its handler for any exception.
    app.exception_handler(RequestValidationError)(_invalid)
    app.exception_handler(HTTPException)(_http_error)


async def _invalid(request: Request, exc: RequestValidationError) -> Response:
    first = exc.errors()[0]
    where, *names = (str(part) for part in first["loc"])
    field = ".".join(names) or where
    reason = "is required" if first["type"] == "missing" else first["msg"]
    body = {"error": f"{where} parameter '{field}' {reason}", "field": field}
    return JSONResponse(body, status_code=422)


async def _http_error(request: Request, exc: HTTPException) -> Response:
    if exc.status_code in BODILESS:
        return Response(status_code=exc.status_code, headers=exc.headers)
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=exc.headers)
