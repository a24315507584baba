"""The webhook's request and response bodies, and how the OpenAPI schema describes them."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from adapters.webhook.auth import SIGNATURE_HEADER, TIMESTAMP_HEADER
from core.errors import RequestRefused

M = TypeVar("M", bound=BaseModel)

ID_MAX = 255
# Route names; others are answered 404.
ROUTE_REGEX = "^[A-Za-z0-9_.-]{1,64}$"
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


def _id_as_text(value: Any) -> Any:
    # Integer ids are common (Telegram-style); bools are a client bug, not ids. JSON
    # Schema counts 12.0 as an integer, so it is one here too.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if not INT_MIN <= value <= INT_MAX:
            raise ValueError("an integer id must fit in 64 bits")
        return str(value)
    if isinstance(value, str) and "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


# What the schema says is what the validator takes: text of 1-255 characters (no NUL),
# or a 64-bit integer (as platforms number things).
ID_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1, "maxLength": ID_MAX, "pattern": "^[^\\x00]*$"},
        {"type": "integer", "minimum": INT_MIN, "maximum": INT_MAX},
    ]
}
IdText = Annotated[str, Field(min_length=1, max_length=ID_MAX)]
Id = Annotated[IdText, BeforeValidator(_id_as_text), WithJsonSchema(ID_SCHEMA)]
OptionalId = Annotated[
    IdText | None,
    BeforeValidator(_id_as_text),
    WithJsonSchema({"anyOf": [*ID_SCHEMA["anyOf"], {"type": "null"}]}),
]


# Images a message may carry, and the largest each may be (decoded, or fetched from its
# url; an inline one is also bounded by webhook.max_body_bytes).
MAX_IMAGES = 4
MAX_IMAGE_BYTES = 10 * 1024 * 1024
IMAGE_MIMES = ("image/jpeg", "image/png", "image/gif", "image/webp")
# Standard base64 with its padding, no line breaks; the schema says the same.
BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
URL_PATTERN = r"^[Hh][Tt][Tt][Pp][Ss]?://[^\s/?#]+(?:[/?#]\S*)?$"
# Absent is allowed, an explicit null or "" is not: the schema has no null for them.
UrlText = Annotated[
    str,
    Field(min_length=1, max_length=2048, pattern=URL_PATTERN),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": 2048,
            "pattern": URL_PATTERN,
            "description": "An http or https URL the gateway fetches the image from.",
        }
    ),
]
Base64Text = Annotated[
    str,
    Field(min_length=4, max_length=-(-MAX_IMAGE_BYTES // 3) * 4, pattern=BASE64_PATTERN),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 4,
            "maxLength": -(-MAX_IMAGE_BYTES // 3) * 4,
            "pattern": BASE64_PATTERN,
            "description": "The image itself, in standard base64.",
        }
    ),
]


def _one_source_schema(schema: dict[str, Any]) -> None:
    schema["oneOf"] = [{"required": ["url"]}, {"required": ["data_base64"]}]
    for name in ("url", "data_base64"):
        schema["properties"][name].pop("default", None)  # "" stands for absent, not a value


class WebhookAttachment(BaseModel):
    """An image sent with a message: exactly one of ``url`` and ``data_base64``."""

    model_config = ConfigDict(json_schema_extra=_one_source_schema)

    type: Literal["image"]
    mime: Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
    url: UrlText = ""
    data_base64: Base64Text = ""

    @model_validator(mode="after")
    def _one_source(self) -> WebhookAttachment:
        if bool(self.url) == bool(self.data_base64):
            raise ValueError("give exactly one of url and data_base64")
        return self


class WebhookMessage(BaseModel):
    """The JSON body of ``POST /webhook/{route}``. ``text`` may be empty when the message
    carries images."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"properties": {"text": {"minLength": 1}}},
                {"required": ["attachments"], "properties": {"attachments": {"minItems": 1}}},
            ]
        }
    )

    chat_id: Id
    user_id: Id
    # Before ``text``: its check reads them.
    attachments: list[WebhookAttachment] = Field(default_factory=list, max_length=MAX_IMAGES)
    text: str
    message_id: OptionalId = None
    user_name: str | None = Field(default=None, max_length=ID_MAX)
    thread_id: OptionalId = None

    @field_validator("text")
    @classmethod
    def _words_or_images(cls, text: str, info: ValidationInfo) -> str:
        if not text and not info.data.get("attachments"):
            raise ValueError("must not be empty unless the message carries attachments")
        return text


class ReplyFile(BaseModel):
    """A file sent with a reply: ``GET`` its ``url`` (relative to the gateway, signed like
    every webhook route) for the bytes."""

    id: str
    name: str
    mime: str
    size: int
    caption: str | None = None
    url: str


class WebhookReply(BaseModel):
    text: str
    # Present when the reply carries files (``send_file``, a spoken reply).
    files: list[ReplyFile] = Field(default_factory=list)


class PendingApproval(BaseModel):
    """A tool call the paused turn waits on: decide it with
    ``POST /webhook/{route}/approvals/{id}``."""

    id: int
    tool: str
    arguments: str


class WebhookTurn(BaseModel):
    session_id: str | None
    message_id: str
    replies: list[WebhookReply]
    # Present when the turn paused for approvals: ``replies`` are those so far (the
    # prompt); the rest are read from the replies route once it is decided.
    approvals: list[PendingApproval] = Field(default_factory=list)


class ApprovalDecision(BaseModel):
    """The JSON body of ``POST /webhook/{route}/approvals/{id}``."""

    decision: Literal["approve", "deny"]
    user_id: Id
    scope: Literal["once", "session"] = "once"


class ApprovalDecided(BaseModel):
    """The approval as decided."""

    id: int
    tool: str
    status: str
    scope: str | None
    decided_by: str | None


class WebhookQueued(BaseModel):
    message_id: str
    status: str = "queued"


class PulledAction(BaseModel):
    """A button under a reply: sending ``command`` as a message is the same as tapping."""

    label: str
    command: str


class PulledReply(BaseModel):
    id: int
    text: str
    session_id: str | None
    message_id: str | None
    created_at: float
    # An approval's choices (``/approve 12``, ``/approve 12 session``, ``/deny 12``).
    actions: list[PulledAction] = Field(default_factory=list)
    files: list[ReplyFile] = Field(default_factory=list)


class PulledReplies(BaseModel):
    replies: list[PulledReply]
    cursor: int


class ErrorBody(BaseModel):
    """Every 4xx (and 503) our routes answer: what went wrong, and which field if one."""

    error: str
    field: str | None = None


def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description}


# Every answer a webhook route may give besides its success.
ERRORS: dict[int | str, dict[str, Any]] = {
    404: _error("Unknown route name"),
    422: _error("A body, path or query value is not valid (``field`` names it)"),
    503: _error("Starting, stopping or the message store is unavailable; retry after"),
}
SIGNED_ERRORS: dict[int | str, dict[str, Any]] = {
    401: _error("Missing, stale or wrong signature (when the route has a secret)"),
    409: _error("This signature was already used (a replay)"),
    **ERRORS,
}
POST_ERRORS: dict[int | str, dict[str, Any]] = {
    **SIGNED_ERRORS,
    202: {"model": WebhookQueued, "description": "Accepted; the turn is not done yet"},
    403: _error("The access policy keeps this sender out"),
    413: _error("The body is larger than webhook.max_body_bytes"),
}

SIGNATURE_PARAMETERS: list[dict[str, Any]] = [
    {
        "name": TIMESTAMP_HEADER,
        "in": "header",
        "required": False,
        "description": "Unix seconds the request was signed at (required with a secret).",
        "schema": {"type": "string"},
    },
    {
        "name": SIGNATURE_HEADER,
        "in": "header",
        "required": False,
        "description": 'sha256=<hex HMAC of timestamp "." METHOD "." target "." body>'
        " (required with a secret; see the README).",
        "schema": {"type": "string"},
    },
]


def inlined_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema with the models it holds written in place: put into the
    OpenAPI document by hand, its ``#/$defs/...`` references would point nowhere."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def resolved(node: Any) -> Any:
        if isinstance(node, list):
            return [resolved(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref", "")
        if ref.startswith("#/$defs/"):
            return resolved(defs[ref.removeprefix("#/$defs/")])
        return {key: resolved(value) for key, value in node.items()}

    inlined: dict[str, Any] = resolved(schema)
    return inlined


# ``post_message`` reads its own parameters, so FastAPI cannot describe them.
POST_OPENAPI: dict[str, Any] = {
    "parameters": [
        {
            "name": "route",
            "in": "path",
            "required": True,
            "schema": {"title": "Route", "type": "string", "pattern": ROUTE_REGEX},
        },
        {
            "name": "wait",
            "in": "query",
            "required": False,
            "description": "Wait for the turn and answer with its replies (else 202).",
            "schema": {"title": "Wait", "type": "boolean", "default": True},
        },
        *SIGNATURE_PARAMETERS,
    ],
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": inlined_schema(WebhookMessage)}},
    },
}

APPROVAL_ERRORS: dict[int | str, dict[str, Any]] = {
    **SIGNED_ERRORS,
    403: _error("This user may not decide approvals (owners and tools.approvers may)"),
    404: _error("Unknown route name, or no approval with this id on this route"),
    409: _error("The approval was already decided, or this signature was already used"),
}

APPROVAL_OPENAPI: dict[str, Any] = {
    "parameters": SIGNATURE_PARAMETERS,
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": ApprovalDecision.model_json_schema()}},
    },
}


FILE_ERRORS: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The file's bytes, with its own Content-Type and its name in "
        "Content-Disposition",
        "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
    },
    **SIGNED_ERRORS,
    404: _error("Unknown route name, or no file with this id sent on this route"),
}

FILE_OPENAPI: dict[str, Any] = {"parameters": SIGNATURE_PARAMETERS}


def parse_body(body: bytes, model: type[M]) -> M:
    """A request body as ``model``; a 422 ``RequestRefused`` naming the first bad field."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        # ValueError covers JSONDecodeError, UnicodeDecodeError and integers past
        # Python's digit limit; RecursionError is deeply nested arrays or objects.
        raise RequestRefused(422, f"body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise RequestRefused(422, "body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = ".".join(str(p) for p in first["loc"]) or "body"
        reason = "is required" if first["type"] == "missing" else first["msg"]
        raise RequestRefused(422, f"field '{name}' {reason}", field=name) from None
