"""What the model reads of an MCP tool result: one JSON payload, capped in size.

Text blocks are passed as they are; structured content as JSON (unless a text block
already is exactly that JSON, as SDK servers send it); resource links and embedded text
resources as text. The model path carries text only (``ChatMessage.content`` is a
string), so an image, audio or binary resource becomes a short placeholder naming its
MIME type and size. An ``isError`` result becomes ``{"success": false, "error": ...}``.
The whole text is cut to ``max_chars`` with a marker saying how much was cut.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)


def payload(result: CallToolResult, max_chars: int) -> str:
    """The JSON text the model reads for ``result``."""
    text = cap(render(result), max_chars)
    if result.is_error:
        return json.dumps({"success": False, "error": text or "the tool reported an error"})
    return json.dumps({"success": True, "result": text})


def error(message: str) -> str:
    """An error payload, shaped like the registry's own."""
    return json.dumps({"success": False, "error": message})


def render(result: CallToolResult) -> str:
    parts = [_block(block) for block in result.content]
    structured = result.structured_content
    if structured is not None and not any(_is_json_of(part, structured) for part in parts):
        parts.append("structured content (JSON): " + json.dumps(structured, ensure_ascii=False))
    return "\n".join(part for part in parts if part)


def cap(text: str, max_chars: int) -> str:
    """``text``, or its first part and a marker when it is longer than ``max_chars``."""
    if len(text) <= max_chars:
        return text
    cut = len(text) - max_chars
    return (
        f"{text[:max_chars]}\n[cut {cut:,} of {len(text):,} characters: the result is "
        f"longer than mcp.max_result_chars ({max_chars:,})]"
    )


def _block(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return f"[{kind}: {block.mime_type}, {_decoded_size(block.data):,} bytes, not shown]"
    if isinstance(block, ResourceLink):
        about = f" ({block.description})" if block.description else ""
        return f"[resource link: {block.name} <{block.uri}>{about}]"
    if isinstance(block, EmbeddedResource):
        return _resource(block.resource)
    return f"[{getattr(block, 'type', 'unknown')} content, not shown]"


def _resource(resource: TextResourceContents | BlobResourceContents) -> str:
    if isinstance(resource, TextResourceContents):
        return f"[resource <{resource.uri}>]\n{resource.text}"
    mime = resource.mime_type or "unknown type"
    size = _decoded_size(resource.blob)
    return f"[resource <{resource.uri}>: {mime}, {size:,} bytes, not shown]"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _is_json_of(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False
