"""HMAC request signing for the webhook adapter.

A signed request carries ``X-Chatgate-Timestamp`` (unix seconds) and
``X-Chatgate-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + raw body)>``.
"""

from __future__ import annotations

import hashlib
import hmac

from core.errors import SignatureError

TIMESTAMP_HEADER = "x-chatgate-timestamp"
SIGNATURE_HEADER = "x-chatgate-signature"


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(
    secret: str,
    *,
    timestamp: str | None,
    signature: str | None,
    body: bytes,
    now: float,
    max_skew: float,
) -> None:
    """Raise ``SignatureError`` unless the request is signed with ``secret`` and fresh."""
    if not timestamp or not signature:
        raise SignatureError("missing X-Chatgate-Timestamp or X-Chatgate-Signature header")
    try:
        sent_at = int(timestamp)
    except ValueError:
        raise SignatureError("X-Chatgate-Timestamp must be unix seconds") from None
    if abs(now - sent_at) > max_skew:
        raise SignatureError("timestamp is outside the allowed clock skew")
    expected = sign(secret, timestamp, body)
    if not hmac.compare_digest(expected.encode(), signature.strip().encode()):
        raise SignatureError("signature does not match")
