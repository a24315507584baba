"""Telegram's errors as chatgate's, for everything a reply sends (``send``, ``files``).

``RetryAfter`` becomes ``DeliveryRateLimited`` (with the pause Telegram names, capped),
a refusal for good (``Forbidden``: the bot was blocked or removed; ``ChatMigrated``)
``Undeliverable``, any other failure a ``DeliveryError`` the outbox retries.
``BadRequest`` is left to the caller, which knows what to drop and try again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    NetworkError,
    RetryAfter,
    TelegramError,
)

from core.errors import DeliveryError, DeliveryRateLimited, Undeliverable
from core.retry import RetryPolicy

T = TypeVar("T")

MAX_RETRY_AFTER_SECONDS = 300.0
# Sends of one part while Telegram answers 429, each after the pause it names; then the
# outbox takes over (with its own backoff).
RATE_LIMIT_WAITS = RetryPolicy(attempts=4, base_seconds=0.0, max_seconds=MAX_RETRY_AFTER_SECONDS)


async def translated(chat_id: str, call: Callable[[], Awaitable[T]]) -> T:
    """``call()``, its Telegram errors raised as chatgate's (see the module docstring)."""
    try:
        return await call()
    except RetryAfter as exc:
        pause = rate_limit_pause(exc)
        raise DeliveryRateLimited("telegram: rate-limited", retry_after=pause) from exc
    except Forbidden as exc:
        raise Undeliverable(f"telegram chat {chat_id}: {exc.message}") from exc
    except ChatMigrated as exc:
        raise Undeliverable(f"telegram chat {chat_id} became supergroup {exc.new_chat_id}") from exc
    except BadRequest:
        raise
    except (NetworkError, TelegramError) as exc:
        raise DeliveryError(f"telegram: {exc}") from exc


def retry_seconds(exc: RetryAfter) -> float:
    """The pause a 429 names: a ``timedelta`` from PTB 23 on, and in PTB 22 once the
    adapter opted in (``PTB_TIMEDELTA``); seconds before that."""
    value: int | float | timedelta = exc.retry_after
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)


def rate_limit_pause(exc: RetryAfter) -> float:
    """How long to wait after ``exc``, at most ``MAX_RETRY_AFTER_SECONDS``."""
    return min(retry_seconds(exc), MAX_RETRY_AFTER_SECONDS)
