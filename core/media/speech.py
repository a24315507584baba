"""Speech on an OpenAI-compatible server: ``/audio/transcriptions`` and ``/audio/speech``.

Both go through the official ``openai`` SDK (``client.audio.transcriptions.create``,
``client.audio.speech.create``), so OpenAI, Groq, a local Whisper or Kokoro server that
speaks the API all work. The SDK's own retries are off: transient failures (429, 5xx,
timeouts, a refused connection) are retried here through ``core.retry`` with the
policy given, a server's ``Retry-After`` obeyed. SDK errors become ``core.errors``
types as for a chat model (``core.models.openai_client.translate_error``): the caller
catches ``ModelError`` and says in one line what went wrong.

Each call opens a client and closes it: voice notes are rare beside chat turns, and a
client that lives for one call needs no lifecycle of its own. The SDK is imported on
first use, so a gateway that never hears a voice note never loads it for this.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from core.errors import TransientModelError
from core.record import record
from core.retry import RetryPolicy, retry_async

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

T = TypeVar("T")

# Local servers ignore the key, but the SDK insists on one.
LOCAL_SERVER_KEY = "not-needed"


@record
class SpeechServer:
    """Where speech is sent and how patiently: ``base_url`` None is OpenAI's own API."""

    base_url: str | None
    api_key: str | None
    model: str
    timeout_seconds: float
    retry: RetryPolicy


class SpeechClient:
    """Transcribes audio and speaks text on one ``SpeechServer``."""

    def __init__(self, server: SpeechServer) -> None:
        self.server = server

    async def transcribe(self, data: bytes, filename: str, mime: str) -> str:
        """The words spoken in ``data`` (an audio file called ``filename``); raises a
        ``core.errors.ModelError`` when the server cannot say."""

        async def call(client: openai.AsyncOpenAI) -> str:
            result = await client.audio.transcriptions.create(
                file=(filename, data, mime), model=self.server.model
            )
            return result.text

        return await self._retried(call)

    async def speak(self, text: str, voice: str) -> bytes:
        """``text`` read aloud in ``voice``, as Opus in an Ogg file (what chat apps play
        as a voice message); raises a ``core.errors.ModelError`` on failure."""

        async def call(client: openai.AsyncOpenAI) -> bytes:
            response = await client.audio.speech.create(
                model=self.server.model, voice=voice, input=text, response_format="opus"
            )
            return await response.aread()

        return await self._retried(call)

    async def _retried(self, call: Callable[[openai.AsyncOpenAI], Awaitable[T]]) -> T:
        return await retry_async(
            lambda: self._once(call),
            policy=self.server.retry,
            retry_on=(TransientModelError,),
            on_retry=_log_retry,
        )

    async def _once(self, call: Callable[[openai.AsyncOpenAI], Awaitable[T]]) -> T:
        import openai

        from core.models.openai_client import translate_error

        server = self.server
        try:
            async with openai.AsyncOpenAI(
                api_key=server.api_key or LOCAL_SERVER_KEY,
                base_url=server.base_url,
                timeout=server.timeout_seconds,
                max_retries=0,
            ) as client:
                return await call(client)
        except openai.OpenAIError as exc:
            raise translate_error(exc) from exc


def _log_retry(attempt: int, error: BaseException, delay: float) -> None:
    log.warning(
        "speech call failed, retrying: attempt=%s delay=%.2fs error=%s",
        attempt,
        delay,
        type(error).__name__,
    )
