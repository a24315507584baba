"""One exception tree for chatgate.

ChatgateError
├── ConfigError              a setting is missing or invalid (carries the key)
├── StoreError               the SessionDB could not be read or written
└── ModelError               a model provider call failed
    ├── TransientModelError  worth retrying
    │   ├── RateLimited      429; carries ``retry_after`` seconds when the provider said
    │   ├── ProviderUnavailable  5xx or the connection failed
    │   └── ModelTimeout     no answer within the configured timeout
    └── ModelRequestError    the provider refused the request (4xx other than 429)

Each adapter and model client translates its library's errors into these at its own
boundary, so the rest of the code catches narrow types and never inspects class names.
"""

from __future__ import annotations


class ChatgateError(Exception):
    """Base class of every error chatgate raises on purpose."""


class ConfigError(ChatgateError):
    """A setting is missing or invalid; ``key`` names it in dotted form."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


class StoreError(ChatgateError):
    """The SessionDB could not be read or written."""


class DeliveryError(ChatgateError):
    """A reply could not be delivered now; it stays in the outbox and is retried."""


class Undeliverable(DeliveryError):
    """A reply can never be delivered (the person blocked the bot, the chat is gone)."""


class ModelError(ChatgateError):
    """A model provider call failed."""

    def __init__(self, message: str, *, provider: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status


class TransientModelError(ModelError):
    """A failure worth retrying after a pause."""

    retry_after: float | None = None


class RateLimited(TransientModelError):
    """The provider answered 429; ``retry_after`` is its requested pause in seconds."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = 429,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status=status)
        self.retry_after = retry_after


class ProviderUnavailable(TransientModelError):
    """The provider answered 5xx or could not be reached."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status=status)
        self.retry_after = retry_after


class ModelTimeout(TransientModelError):
    """The provider did not answer within the configured timeout."""


class ModelRequestError(ModelError):
    """The provider refused the request; retrying the same request will not help."""
