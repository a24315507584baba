"""Voice out: replies to voice notes also sent as voice messages (the ``tts:`` section).

Off by default. When on, the answer to a message that held a voice note is read aloud
by an OpenAI-compatible ``/audio/speech`` (``core.media.spoken``, Opus in Ogg) and sent
with the text: the reply's ``reply_media`` hook stores it as a voice file the platform
sends. ``base_url`` and ``api_key`` default to the chat model's; turned on with
neither, the gateway does not start (one line saying what to set).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pydantic import Field, SecretStr, field_validator

from adapters.platform import Section
from core.errors import ConfigError
from core.media.speech import SpeechClient, SpeechServer
from core.media.spoken import SpokenReplies
from core.media.store import MediaStore
from gateway.features.base import Contribution, FeatureContext, FeatureSpec
from gateway.features.stt import http_url, speech_server
from gateway.settings import Settings

STARTER_CONFIG = """\
tts:                       # replies to voice notes also sent as voice messages
  enabled: false           # true: read the answer to a voice note aloud (with the text)
  base_url: null           # an OpenAI-compatible server with /audio/speech;
                           # null: model.base_url (the chat model's server)
  # api_key: ...           # [CHATGATE_TTS__API_KEY] unset: model.api_key
  model: tts-1             # e.g. tts-1, gpt-4o-mini-tts, kokoro
  voice: alloy             # e.g. alloy, echo, nova, shimmer (the server's names)
  max_chars: 1500          # longer replies are sent as text only
  timeout_seconds: 60      # per try; retried like model calls (model.max_retries)
"""


class TtsSettings(Section):
    enabled: bool = False
    # An OpenAI-compatible server; None: the chat model's (``model.base_url``).
    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str = Field(default="tts-1", min_length=1)
    voice: str = Field(default="alloy", min_length=1)
    # OpenAI reads at most 4,096 characters at once.
    max_chars: int = Field(default=1500, ge=1, le=4096)
    timeout_seconds: float = Field(default=60.0, gt=0, le=3600)

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        return http_url(value)


class Tts:
    def __init__(self, server: SpeechServer, settings: TtsSettings, store: MediaStore) -> None:
        self._hook = SpokenReplies(
            SpeechClient(server), store, voice=settings.voice, max_chars=settings.max_chars
        )

    @asynccontextmanager
    async def open(self, ctx: FeatureContext) -> AsyncIterator[Contribution]:
        yield Contribution(reply_media=[self._hook])


def build(settings: Settings) -> Tts | None:
    s = settings.section(TtsSettings)
    if not s.enabled:
        return None
    server = speech_server(
        settings, s.base_url, s.api_key, model=s.model, timeout_seconds=s.timeout_seconds
    )
    if server is None:
        raise ConfigError(
            "tts.base_url",
            "spoken replies need an OpenAI-compatible server: set tts.base_url "
            "(or model.base_url / OPENAI_API_KEY), or turn tts.enabled off",
        )
    return Tts(server, s, MediaStore(settings.media_dir))


SPEC = FeatureSpec("tts", build, settings=TtsSettings, starter_config=STARTER_CONFIG)
