"""``POST /webhook/{route}/approvals/{id}``: decide a tool call a turn waits on.

The body is ``{"decision": "approve" | "deny", "user_id", "scope"?: "once" | "session"}``,
signed like every webhook route. The core checks that ``user_id`` may decide (owners of
the webhook platform and ``tools.approvers``): 403 otherwise; an id not asked on this
route is 404, one already decided 409. The resumed turn's replies are then read (or
pushed) like ``wait=false`` replies.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import FastAPI, Path, Request
from fastapi.responses import JSONResponse

from adapters.webhook.schema import (
    APPROVAL_ERRORS,
    APPROVAL_OPENAPI,
    ROUTE_REGEX,
    ApprovalDecided,
    ApprovalDecision,
    parse_body,
)
from core.errors import RequestRefused, StoreError
from core.inbox import Inbox

RouteName = Annotated[str, Path(json_schema_extra={"pattern": ROUTE_REGEX})]
ApprovalId = Annotated[int, Path(ge=1, le=2**63 - 1)]
ReadBody = Callable[[str, Request], Awaitable[tuple[bytes, bool]]]
REPLAYED = "this signature was already used: sign each request anew"


class ApprovalRoute:
    """See the module docstring; ``read_body`` checks the route and the signature."""

    def __init__(self, platform: str, inbox: Callable[[], Inbox], read_body: ReadBody) -> None:
        self._platform = platform
        self._inbox = inbox
        self._read_body = read_body

    def install(self, app: FastAPI) -> None:
        app.add_api_route(
            "/webhook/{route}/approvals/{approval_id}",
            self.decide,
            methods=["POST"],
            response_model=ApprovalDecided,
            responses=APPROVAL_ERRORS,
            openapi_extra=APPROVAL_OPENAPI,
            summary="Approve or deny a tool call the agent waits on",
            tags=["webhook"],
        )

    async def decide(
        self, route: RouteName, approval_id: ApprovalId, request: Request
    ) -> JSONResponse:
        """Record the decision; the paused turn goes on."""
        try:
            inbox = self._inbox()
            body, replayed = await self._read_body(route, request)
            _refuse_replay(replayed)
            decision = parse_body(body, ApprovalDecision)
            decided = await inbox.decide_approval(
                approval_id,
                platform=self._platform,
                route=route,
                user_id=decision.user_id,
                approve=decision.decision == "approve",
                scope=decision.scope,
            )
        except RequestRefused as problem:
            return JSONResponse(problem.body, status_code=problem.status, headers=problem.headers)
        except StoreError:
            unavailable = {"error": "the message store is unavailable; retry shortly"}
            return JSONResponse(unavailable, status_code=503, headers={"Retry-After": "1"})
        if decided.kind == "unknown" or decided.approval is None:
            status = 403 if decided.kind == "forbidden" else 404
            error = _REFUSALS[decided.kind].format(id=approval_id)
            return JSONResponse({"error": error}, status_code=status)
        approval = decided.approval
        answer = ApprovalDecided(
            id=approval.id,
            tool=approval.tool_name,
            status=approval.status,
            scope=approval.scope,
            decided_by=approval.decided_by,
        )
        if decided.kind == "already":
            error = f"approval {approval.id} was already decided: {approval.status}"
            return JSONResponse({"error": error}, status_code=409)
        return JSONResponse(answer.model_dump())


_REFUSALS = {
    "unknown": "no approval {id} on this route",
    "forbidden": "this user may not decide approvals",
}


def _refuse_replay(replayed: bool) -> None:
    if replayed:
        raise RequestRefused(409, REPLAYED)
