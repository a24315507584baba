"""Files the agent sends to a webhook chat (``send_file``; a spoken reply).

A reply lists its files as ``{"id", "name", "mime", "size", "caption", "url"}``, in the
waiting ``POST``'s answer and in pulled replies. ``url`` is relative to the gateway,
``/webhook/{route}/files/{id}``: ``GET`` it, signed like every webhook route, for the
bytes (``Content-Type`` the file's, ``Content-Disposition: attachment`` with its name).
The id is random (144 bits) and only serves on the route its chat belongs to: another
route's id, or one never sent, is a 404.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

from fastapi import FastAPI, Path, Request
from fastapi.responses import FileResponse, JSONResponse, Response

from adapters.webhook.approvals import ReadBody
from adapters.webhook.schema import FILE_ERRORS, FILE_OPENAPI, ROUTE_REGEX, ReplyFile
from core.errors import RequestRefused, StoreError
from core.inbox import Inbox
from core.media.store import MediaStore
from core.messages import OutboundFile, OutboundMessage

RouteName = Annotated[str, Path(json_schema_extra={"pattern": ROUTE_REGEX})]
FILE_ID_REGEX = "^[A-Za-z0-9_-]{1,64}$"
FileId = Annotated[str, Path(min_length=1, max_length=64, pattern=FILE_ID_REGEX)]
REPLAYED = "this signature was already used: sign each request anew"


def file_url(route: str, file_id: str) -> str:
    """Where ``GET`` serves a file: relative to the gateway's address."""
    return f"/webhook/{route}/files/{file_id}"


def reply_files(route: str, files: Sequence[OutboundFile]) -> list[ReplyFile]:
    """A reply's files as its JSON lists them (see the module docstring)."""
    return [
        ReplyFile(
            id=f.id,
            name=f.name,
            mime=f.mime,
            size=f.media.size,
            caption=f.media.caption or None,
            url=file_url(route, f.id),
        )
        for f in files
    ]


def reply_json(route: str, reply: OutboundMessage) -> dict[str, Any]:
    """One reply of a waiting ``POST``'s answer: its text, and its files if it has any."""
    if not reply.files:
        return {"text": reply.text}
    return {"text": reply.text, "files": [f.model_dump() for f in reply_files(route, reply.files)]}


class FileRoute:
    """``GET /webhook/{route}/files/{file_id}``; ``read_body`` checks the route and the
    signature, as for every webhook route."""

    def __init__(
        self,
        platform: str,
        inbox: Callable[[], Inbox],
        read_body: ReadBody,
        media: MediaStore | None,
    ) -> None:
        self._platform = platform
        self._inbox = inbox
        self._read_body = read_body
        self._media = media

    def install(self, app: FastAPI) -> None:
        app.add_api_route(
            "/webhook/{route}/files/{file_id}",
            self.serve,
            methods=["GET"],
            response_class=Response,
            responses=FILE_ERRORS,
            openapi_extra=FILE_OPENAPI,
            summary="Download a file the agent sent with a reply",
            tags=["webhook"],
        )

    async def serve(self, route: RouteName, file_id: FileId, request: Request) -> Response:
        """The file's bytes, or a 404 when this route sent no file by that id."""
        try:
            inbox = self._inbox()
            _refuse_replay((await self._read_body(route, request))[1])
            found = await inbox.sent_file(file_id, platform=self._platform, route=route)
        except RequestRefused as problem:
            return JSONResponse(problem.body, status_code=problem.status, headers=problem.headers)
        except StoreError:
            unavailable = {"error": "the message store is unavailable; retry shortly"}
            return JSONResponse(unavailable, status_code=503, headers={"Retry-After": "1"})
        if found is None:
            return JSONResponse({"error": f"no file {file_id} on this route"}, status_code=404)
        file = found[0]
        path = self._media.path(file.media) if self._media is not None else None
        if path is None or not path.is_file():
            return JSONResponse({"error": f"file {file_id} is no longer stored"}, status_code=404)
        return FileResponse(
            path,
            media_type=file.mime,
            filename=file.name,
            # The bytes are whatever the agent sent: never let a browser sniff them into HTML.
            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "private"},
        )


def _refuse_replay(replayed: bool) -> None:
    if replayed:
        raise RequestRefused(409, REPLAYED)
