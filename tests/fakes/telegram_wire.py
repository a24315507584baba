"""How the Bot API talks over HTTP, for ``tests.fakes.telegram_server``.

Requests: parameters come from the query string plus a JSON, form-encoded or multipart
body, decoded as python-telegram-bot encodes them (strings raw, everything else JSON).
Answers: ``ApiError`` raised anywhere in a handler becomes Telegram's error envelope
(``ok: false``, ``error_code``, ``description``, ``parameters.retry_after``); the
descriptions Telegram uses for conflicts and blocked chats live here too.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.fakes.telegram_payloads import Json

CONFLICT_OTHER_POLL = (
    "Conflict: terminated by other getUpdates request; "
    "make sure that only one bot instance is running"
)
CONFLICT_WEBHOOK = (
    "Conflict: can't use getUpdates method while webhook is active; "
    "use deleteWebhook to delete the webhook first"
)
BLOCKED_BY_USER = "Forbidden: bot was blocked by the user"
KICKED_FROM_GROUP = "Forbidden: bot was kicked from the supergroup chat"

# What FakeTelegram.fail answers with when the test gives no description.
DEFAULT_DESCRIPTIONS = {
    400: "Bad Request: fake failure",
    401: "Unauthorized",
    403: BLOCKED_BY_USER,
    404: "Not Found",
    409: CONFLICT_OTHER_POLL,
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}

# Parameters Telegram types as strings: form-encoded values of these are never JSON-decoded
# (PTB sends strings raw and everything else JSON-encoded).
_STRING_PARAMS = frozenset(
    {
        "text",
        "caption",
        "parse_mode",
        "url",
        "secret_token",
        "action",
        "file_id",
        "language_code",
        "inline_message_id",
        "callback_query_id",
        "ip_address",
        "business_connection_id",
        "message_effect_id",
    }
)


class Upload(bytes):
    """An uploaded file's bytes, with the name and type its multipart part gave."""

    filename: str | None
    content_type: str | None

    def __new__(cls, data: bytes, filename: str | None, content_type: str | None) -> Upload:
        upload = super().__new__(cls, data)
        upload.filename = filename
        upload.content_type = content_type
        return upload


class ApiError(Exception):
    """A Bot API error answer: raised inside a handler, turned into the error envelope."""

    def __init__(self, status: int, description: str, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.retry_after = retry_after


async def decode_parameters(request: Request) -> Json:
    """Decode query string plus a JSON, form-encoded or multipart body."""
    params: Json = {key: _decode(key, value) for key, value in request.query_params.items()}
    body = await request.body()
    content_type = request.headers.get("content-type", "")
    if not body:
        return params
    if content_type.startswith("application/json"):
        decoded = json.loads(body)
        if isinstance(decoded, dict):
            params.update(decoded)
    elif content_type.startswith("multipart/form-data"):
        params.update(_multipart(content_type, body))
    else:
        pairs = parse_qsl(body.decode(), keep_blank_values=True)
        params.update({key: _decode(key, value) for key, value in pairs})
    return params


def _multipart(content_type: str, body: bytes) -> Json:
    header = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    parsed = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(header + body)
    params: Json = {}
    for part in parsed.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        payload = part.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        if part.get_filename() is not None:  # an uploaded file: keep the bytes and name
            params[name] = Upload(data, part.get_filename(), part.get_content_type())
        else:
            params[name] = _decode(name, data.decode())
    return params


def _decode(name: str, value: str) -> Any:
    if name in _STRING_PARAMS:
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def int_param(params: Json, name: str) -> int | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ApiError(400, f"Bad Request: invalid {name} specified") from None


def error_response(error: ApiError) -> Response:
    body: Json = {"ok": False, "error_code": error.status, "description": error.description}
    if error.retry_after is not None:
        body["parameters"] = {"retry_after": error.retry_after}
    return JSONResponse(body, status_code=error.status)
