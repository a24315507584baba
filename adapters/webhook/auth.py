"""HMAC request signing for the webhook adapter.

A signed request carries ``X-Chatgate-Timestamp`` (unix seconds) and
``X-Chatgate-Signature: sha256=<hex>``, the HMAC-SHA256 under the route's secret of

    timestamp + "." + METHOD + "." + target + "." + raw body

where ``target`` is the path and query exactly as sent on the wire, percent-encoding
and all (``/webhook/demo/chats/a%2Fb/replies?after=3``). The method and target bind a
signature to one route, one chat and one query: captured, it is good for nothing else.
The old form, ``timestamp + "." + raw body``, is accepted only when
``webhook.legacy_signatures`` is on.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from core.errors import SignatureError

TIMESTAMP_HEADER = "x-chatgate-timestamp"
SIGNATURE_HEADER = "x-chatgate-signature"
PREFIX = "sha256="


def signed_bytes(timestamp: str, method: str, target: str | bytes, body: bytes) -> bytes:
    """The exact bytes a signature covers (see the module docstring)."""
    wire = target.encode() if isinstance(target, str) else target
    return b".".join((timestamp.encode(), method.upper().encode(), wire, body))


def sign(secret: str, timestamp: str, method: str, target: str | bytes, body: bytes) -> str:
    """The signature header value for one request."""
    return _header(secret, signed_bytes(timestamp, method, target, body))


def sign_legacy(secret: str, timestamp: str, body: bytes) -> str:
    """The old signature, over timestamp and body only (``webhook.legacy_signatures``)."""
    return _header(secret, timestamp.encode() + b"." + body)


def request_target(scope: Mapping[str, Any]) -> bytes:
    """The path and query of an ASGI request as its client sent them."""
    path: bytes = scope.get("raw_path") or scope["path"].encode()
    query: bytes = scope.get("query_string") or b""
    return path + b"?" + query if query else path


def verify(
    secret: str,
    *,
    timestamp: str | None,
    signature: str | None,
    method: str,
    target: bytes,
    body: bytes,
    now: float,
    max_skew: float,
    legacy: bool = False,
) -> bytes:
    """The signature as given, or ``SignatureError`` unless the request is signed with
    ``secret`` (see the module docstring) and fresh."""
    if not timestamp or not signature:
        raise SignatureError("missing X-Chatgate-Timestamp or X-Chatgate-Signature header")
    try:
        sent_at = int(timestamp)
    except ValueError:
        raise SignatureError("X-Chatgate-Timestamp must be unix seconds") from None
    if abs(now - sent_at) > max_skew:
        raise SignatureError("timestamp is outside the allowed clock skew")
    given = signature.strip().encode()
    expected = sign(secret, timestamp, method, target, body)
    if hmac.compare_digest(expected.encode(), given):
        return given
    if legacy and hmac.compare_digest(sign_legacy(secret, timestamp, body).encode(), given):
        return given
    raise SignatureError("signature does not match this request (method, path, query, body)")


def _header(secret: str, message: bytes) -> str:
    return PREFIX + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
