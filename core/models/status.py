"""HTTP status of a provider's answer -> the ``core.errors`` exception for it.

Every provider speaks HTTP, and the meaning of a status is the same for all of
them: 429 is a rate limit, 5xx an outage, 408 a timeout, any other 4xx a request
the provider will never accept.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.errors import (
    ModelError,
    ModelRequestError,
    ModelTimeout,
    ProviderUnavailable,
    RateLimited,
)
from core.retry import retry_after_from_headers


def status_error(
    provider: str, status: int, message: str, headers: Mapping[str, str]
) -> ModelError:
    """The exception for an HTTP error answer; ``Retry-After`` is kept when retryable."""
    text = f"{provider}: HTTP {status}: {message}"
    retry_after = retry_after_from_headers(headers)
    if status == 429:
        return RateLimited(text, provider=provider, retry_after=retry_after)
    if status >= 500:
        return ProviderUnavailable(text, provider=provider, status=status, retry_after=retry_after)
    if status == 408:
        return ModelTimeout(text, provider=provider, status=status)
    return ModelRequestError(text, provider=provider, status=status)
